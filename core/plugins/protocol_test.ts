import assert from "node:assert/strict";
import {
  decodeExit,
  decodeHostFrame,
  decodePluginFrame,
  encodeExit,
  encodeFrame,
  MAX_FRAME,
  MAX_MANIFEST,
  MAX_OUTPUT,
  parseManifest,
} from "./protocol.ts";

const M = { name: "ipmi", version: "1.2.0", protocol: 1, executable: "ipmi-plugin", operations: ["power", "runtime"] };

Deno.test("a manifest parses with default timeouts; each bad field is refused by name", () => {
  const m = parseManifest(JSON.stringify(M), "ipmi");
  assert.deepEqual(m.operations, ["power", "runtime"]);
  assert.deepEqual(m.timeouts, { handshakeMs: 10_000, invokeMs: 600_000, cancelGraceMs: 5_000 });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ ...M, name: "Other" }, /not a plugin name/],
    [{ ...M, executable: "/bin/sh" }, /executable/],
    [{ ...M, executable: "../x" }, /executable/],
    [{ ...M, operations: [] }, /1 to 64/],
    [{ ...M, operations: ["power", "power"] }, /twice/],
    [{ ...M, operations: ["--rm"] }, /not an operation name/],
    [{ ...M, timeouts: { invokeMs: 1 } }, /invokeMs/],
    [{ ...M, timeouts: { killMs: 100 } }, /unknown field killMs/],
    [{ ...M, user: "root" }, /unknown field user/],
  ];
  for (const [raw, re] of bad) assert.throws(() => parseManifest(JSON.stringify(raw), "ipmi"), re);
  assert.throws(() => parseManifest(JSON.stringify(M), "other"), /directory's/);
  assert.throws(() => parseManifest(" ".repeat(MAX_MANIFEST + 1), "ipmi"), /over 65536 bytes/);
  assert.throws(() => parseManifest("{", "ipmi"), /not JSON/);
});

Deno.test("plugin frames decode strictly and within their bounds; bcd's frames are bounded too", () => {
  assert.deepEqual(decodePluginFrame('{"t":"result","id":3,"output":"{}"}'), { t: "result", id: 3, output: "{}" });
  assert.deepEqual(decodePluginFrame('{"t":"hello","protocol":2,"name":"ipmi","version":"1"}').t, "hello");
  for (
    const [line, re] of [
      ['{"t":"result","id":0,"output":"{}"}', /request id/],
      ['{"t":"result","id":1,"output":{}}', /output string/],
      ['{"t":"result","id":1,"output":"","extra":1}', /unknown field extra/],
      ['{"t":"error","id":1,"code":"Bad Code","message":""}', /no code/],
      ['{"t":"log","msg":"x"}', /unknown type "log"/],
      ["[1]", /not an object/],
      ["nope", /not JSON/],
      [`{"t":"result","id":1,"output":"${"x".repeat(MAX_OUTPUT + 1)}"}`, /over 524288 bytes/],
      ["x".repeat(MAX_FRAME), /over 1048576 bytes/],
    ] as const
  ) assert.throws(() => decodePluginFrame(line), re);
  assert.throws(() => encodeFrame({ t: "invoke", id: 1, op: "x", input: "y".repeat(MAX_FRAME) }), RangeError);
});

Deno.test("decodeHostFrame() takes bcd's three frames and refuses the rest, row by row", async (t) => {
  const ok: [string, unknown][] = [
    ['{"t":"hello","protocols":[1],"bcd":"0.1.0"}', { t: "hello", protocols: [1], bcd: "0.1.0" }],
    ['{"t":"invoke","id":3,"op":"power","input":"{}"}', { t: "invoke", id: 3, op: "power", input: "{}" }],
    ['{"t":"cancel","id":3}', { t: "cancel", id: 3 }],
  ];
  for (const [line, want] of ok) await t.step(line, () => assert.deepEqual(decodeHostFrame(line), want));
  const bad: [string, RegExp][] = [
    ['{"t":"exec","cmd":"/bin/sh"}', /unknown type "exec"/],
    ['{"t":"invoke","id":0,"op":"power","input":"{}"}', /no request id/],
    ['{"t":"invoke","id":1,"op":"../x","input":"{}"}', /no operation/],
    ['{"t":"cancel","id":1,"path":"/etc"}', /unknown field path/],
    ['{"t":"hello","protocols":"1","bcd":"x"}', /no protocols/],
    ["not json", /not JSON/],
  ];
  for (const [line, re] of bad) await t.step(line, () => assert.throws(() => decodeHostFrame(line), re));
});

Deno.test("the relay's exit line round-trips, carries a failure reason, and no plugin frame decodes as one", () => {
  const x = { code: 3, signal: null, stderr: "boom", failure: { reason: "plugin-protocol" as const, message: "m" } };
  assert.deepEqual(decodeExit(encodeExit(x).trimEnd()), x);
  assert.deepEqual(decodeExit(encodeExit({ code: null, signal: "SIGKILL", stderr: "" }).trimEnd()), {
    code: null,
    signal: "SIGKILL",
    stderr: "",
  });
  assert.equal(decodeExit('{"t":"result","id":1,"output":"{}"}'), undefined);
  assert.throws(() => decodePluginFrame('{"t":"exit","code":0}'), /unknown type "exit"/);
  assert.throws(() => decodeExit('{"t":"exit","failure":{"reason":"root","message":""}}'), /bad failure/);
});
