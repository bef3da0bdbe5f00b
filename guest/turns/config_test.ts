import assert from "node:assert/strict";
import { ModeConfigError, type ModeSources, resolveMode } from "./config.ts";

function _src(env: Record<string, string> = {}, files: Record<string, string> = {}): ModeSources {
  return {
    env: (n) => (Object.hasOwn(env, n) ? env[n] : undefined),
    readFile: (p) => (Object.hasOwn(files, p) ? files[p]! : null),
  };
}

Deno.test("--turn-cmd selects native mode with argv split on whitespace", () => {
  assert.deepEqual(resolveMode({ turnCmd: " /bin/agent  --once\tturn " }, _src()), {
    kind: "native",
    turnArgv: ["/bin/agent", "--once", "turn"],
  });
});

Deno.test("wrap command from flag, then SLEEPWALK_WRAP_CMD, then /etc/sleepwalk/wrap-cmd", () => {
  const files = { "/etc/sleepwalk/wrap-cmd": "/bin/from-file a\n" };
  const env = { SLEEPWALK_WRAP_CMD: "/bin/from-env" };
  const argv = (m: ReturnType<typeof resolveMode>) => (m.kind === "wrap" ? m.argv : []);
  assert.deepEqual(argv(resolveMode({ wrapCmd: "/bin/flag" }, _src(env, files))), ["/bin/flag"]);
  assert.deepEqual(argv(resolveMode({}, _src(env, files))), ["/bin/from-env"]);
  assert.deepEqual(argv(resolveMode({}, _src({}, files))), ["/bin/from-file", "a"]);
});

Deno.test("markers default to @@TURN_START@@ / @@TURN_END@@ and are overridden by env, then flags", () => {
  const m = resolveMode({ wrapCmd: "x" }, _src());
  assert.ok(m.kind === "wrap" && m.startMarker === "@@TURN_START@@" && m.endMarker === "@@TURN_END@@");
  const e = resolveMode({ wrapCmd: "x" }, _src({ SLEEPWALK_WRAP_START: "S", SLEEPWALK_WRAP_END: "E" }));
  assert.ok(e.kind === "wrap" && e.startMarker === "S" && e.endMarker === "E");
  const f = resolveMode({ wrapCmd: "x", wrapStart: "S2" }, _src({ SLEEPWALK_WRAP_START: "S" }));
  assert.ok(f.kind === "wrap" && f.startMarker === "S2");
});

Deno.test("await-secrets from the flag, the env or the file's presence", () => {
  const aw = (m: ReturnType<typeof resolveMode>) => m.kind === "wrap" && m.awaitSecrets;
  assert.equal(aw(resolveMode({ wrapCmd: "x" }, _src())), false);
  assert.equal(aw(resolveMode({ wrapCmd: "x", wrapAwaitSecrets: true }, _src())), true);
  assert.equal(aw(resolveMode({ wrapCmd: "x" }, _src({ SLEEPWALK_WRAP_AWAIT_SECRETS: "1" }))), true);
  assert.equal(aw(resolveMode({ wrapCmd: "x" }, _src({ SLEEPWALK_WRAP_AWAIT_SECRETS: "0" }))), false);
  assert.equal(aw(resolveMode({ wrapCmd: "x" }, _src({}, { "/etc/sleepwalk/wrap-await-secrets": "" }))), true);
  assert.equal(aw(resolveMode({ wrapCmd: "x", configDir: "/img" }, _src({}, { "/img/wrap-await-secrets": "" }))), true);
});

Deno.test("no mode, both modes, empty commands and equal markers are refused", () => {
  assert.throws(() => resolveMode({}, _src()), ModeConfigError);
  assert.throws(() => resolveMode({ turnCmd: "a", wrapCmd: "b" }, _src()), /pick one/);
  assert.throws(() => resolveMode({ turnCmd: "  " }, _src()), /empty/);
  assert.throws(() => resolveMode({}, _src({}, { "/etc/sleepwalk/wrap-cmd": "\n" })), /empty/);
  assert.throws(() => resolveMode({ wrapCmd: "x", wrapStart: "M", wrapEnd: "M" }, _src()), /differ/);
});
