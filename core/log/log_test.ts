import assert from "node:assert/strict";
import { createLogger, memoryLogger } from "./mod.ts";

Deno.test("log lines are JSON with the level as a word and ids as fields", () => {
  const { logger, lines } = memoryLogger("info");
  logger.info({ command_id: "01J0", generation: 7 }, "command accepted");
  logger.debug("dropped below the level");
  assert.equal(lines.length, 1);
  const l = lines[0]!;
  assert.equal(l.level, "info");
  assert.equal(l.msg, "command accepted");
  assert.equal(l.command_id, "01J0");
  assert.equal(l.generation, 7);
  assert.equal(typeof l.time, "string");
});

Deno.test("a child logger carries its bindings on every line", () => {
  const lines: string[] = [];
  const logger = createLogger({ level: "info", base: { role: "node" }, destination: { write: (s) => lines.push(s) } });
  logger.child({ instance: "i-1" }).warn("domain missing");
  const l = JSON.parse(lines[0]!) as Record<string, unknown>;
  assert.equal(l.role, "node");
  assert.equal(l.instance, "i-1");
  assert.equal(l.level, "warn");
});
