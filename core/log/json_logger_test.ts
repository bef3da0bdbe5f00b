import assert from "node:assert/strict";
import { createLogger, memoryLogger, silentLogger } from "./mod.ts";

/**
 * The lines pino 10.4.0 wrote for these calls with bcd's options (captured before json_logger.ts replaced it; time
 * and stack replaced by placeholders): the logger must keep writing exactly them.
 */
const PINO_LINES = [
  `{"level":"info","time":"T","role":"sim","a":1,"c":{"d":[1,"x"]},"msg":"hello"}`,
  `{"level":"info","time":"T","role":"sim","msg":"just a message"}`,
  `{"level":"warn","time":"T","role":"sim","msg":"from obj"}`,
  `{"level":"warn","time":"T","role":"sim","msg":"from obj","msg":"arg wins"}`,
  `{"level":"error","time":"T","role":"sim","err":{"type":"TypeError","message":"bad thing","stack":"S","code":"E1"},"url":"u","msg":"failed"}`,
  `{"level":"error","time":"T","role":"sim","err":{"type":"TypeError","message":"bad thing","stack":"S","code":"E1"},"msg":"bad thing"}`,
  `{"level":"error","time":"T","role":"sim","err":{"type":"TypeError","message":"bad thing","stack":"S","code":"E1"},"msg":"with msg"}`,
  `{"level":"info","time":"T","role":"sim","command_id":"c1","x":2,"msg":"child"}`,
  `{"level":"debug","time":"T","role":"sim","command_id":"c1","lane":"bulk","msg":"grandchild"}`,
  `{"level":"info","time":"T","role":"sim","circ":{"a":1,"self":"[Circular]"},"msg":"circular"}`,
  `{"level":"info","time":"T","role":"sim","n":10,"msg":"bigint"}`,
  `{"level":"info","time":"T","role":"sim","role":"override","msg":"dup key"}`,
  `{"level":"info","time":"T","role":"sim","msg":"x S y 5"}`,
  `{"level":"fatal","time":"T","role":"sim","err":"a string err","msg":"string err"}`,
  `{"level":"info","time":"T","role":"sim","err":{"type":"Error","message":"outer: inner","stack":"S"},"msg":"cause"}`,
  `{"level":"info","time":"T","role":"sim","s":"line\\nbreak\u2028","msg":"escapes"}`,
  `{"level":"warn","time":"T","role":"sim","msg":"shown"}`,
];

Deno.test("the logger writes the lines pino wrote: fields, bindings, err, cycles, bigints, placeholders, levels", () => {
  const lines: string[] = [];
  const log = createLogger({
    level: "debug",
    base: { role: "sim" },
    destination: { write: (s) => void lines.push(s) },
  });
  log.info({ a: 1, b: undefined, c: { d: [1, "x"] } }, "hello");
  log.info("just a message");
  log.warn({ msg: "from obj" });
  log.warn({ msg: "from obj" }, "arg wins");
  const e = Object.assign(new TypeError("bad thing"), { code: "E1" });
  log.error({ err: e, url: "u" }, "failed");
  log.error(e);
  log.error(e, "with msg");
  const c = log.child({ command_id: "c1" });
  c.info({ x: 2 }, "child");
  c.child({ lane: "bulk" }).debug("grandchild");
  log.trace("not shown");
  const circ: Record<string, unknown> = { a: 1 };
  circ.self = circ;
  log.info({ circ }, "circular");
  log.info({ n: 10n }, "bigint");
  log.info({ role: "override" }, "dup key");
  log.info({}, "x %s y %d", "S", 5);
  log.fatal({ err: "a string err" }, "string err");
  log.info({ err: new Error("outer", { cause: new Error("inner") }) }, "cause");
  log.info({ s: "line\nbreak\u2028" }, "escapes");
  log.level = "warn";
  log.info("hidden");
  log.warn("shown");
  assert.ok(lines.every((l) => l.endsWith("}\n") && !l.slice(0, -1).includes("\n")), "one line per call");
  const stacks = lines.map((l) => (JSON.parse(l) as { err?: { stack?: string } }).err?.stack);
  assert.match(stacks[4]!, /^TypeError: bad thing\n/);
  assert.match(stacks[14]!, /^Error: outer\n[^]*\ncaused by: Error: inner\n/);
  const shape = lines.map((l) =>
    l.slice(0, -1).replace(/"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/, `"time":"T"`)
      .replace(/"stack":"(?:[^"\\]|\\.)*"/, `"stack":"S"`)
  );
  assert.deepEqual(shape, PINO_LINES);
});

Deno.test("levels: a child starts at its parent's level and moves alone; silent writes nothing; bad names refused", () => {
  const { logger, lines } = memoryLogger("info");
  const child = logger.child({ instance: "i-1" });
  child.level = "debug";
  child.debug("child debug");
  logger.debug("parent debug");
  assert.deepEqual(lines.map((l) => l.msg), ["child debug"]);
  assert.equal(logger.isLevelEnabled("info"), true);
  assert.equal(logger.isLevelEnabled("debug"), false);
  assert.throws(() => logger.level = "loud", RangeError);
  const quiet = silentLogger();
  quiet.fatal("nothing");
  assert.equal(quiet.isLevelEnabled("fatal"), false);
});
