import assert from "node:assert/strict";
import { VALID_ARGS as ARGS } from "./args_samples_testing.ts";
import { answerError, decodeAnswer, encodeError, encodeRequest, encodeResult } from "./codec.ts";
import { decodeRequest, RequestRefused } from "./request.ts";
import { HelperError } from "./errors.ts";
import { HELPER_OPS } from "./protocol.ts";

Deno.test("every op's request survives encode and decode unchanged, one line each", () => {
  HELPER_OPS.forEach((op, i) => {
    const line = encodeRequest(i, op, ARGS[op]);
    assert.ok(line.endsWith("\n") && !line.slice(0, -1).includes("\n"), `${op} is one line`);
    assert.deepEqual(decodeRequest(line.slice(0, -1)), { id: i, op, args: ARGS[op] }, op);
  });
});

Deno.test("answers: a result and each refusal code round-trip; the node's error says helper:", () => {
  assert.deepEqual(decodeAnswer(encodeResult(7, { bootId: "b" }).trim()), { id: 7, ok: true, result: { bootId: "b" } });
  assert.deepEqual(decodeAnswer(encodeResult(8, undefined).trim()), { id: 8, ok: true, result: {} });
  for (
    const code of [
      "malformed",
      "line-too-long",
      "unknown-op",
      "not-allowed",
      "unknown-field",
      "invalid-argument",
      "busy",
      "failed",
      "unsupported",
    ] as const
  ) {
    const a = decodeAnswer(
      encodeError(code === "line-too-long" ? null : 3, new HelperError(code, `x: ${code}`)).trim(),
    );
    assert.equal(a.ok, false);
    if (a.ok) continue;
    const e = answerError(a);
    assert.equal(e.code, code);
    assert.equal(e.message, `helper: x: ${code}`);
  }
});

/** Request lines the decoder refuses, with the id it still answers to and the code. */
const BAD_REQUESTS: { why: string; line: string; id: number | null; code: string; names?: RegExp }[] = [
  { why: "not JSON", line: "{id: 1}", id: null, code: "malformed" },
  { why: "a list", line: "[1]", id: null, code: "malformed" },
  { why: "no id", line: '{"op":"holds.list"}', id: null, code: "malformed", names: /id/ },
  { why: "a negative id", line: '{"id":-1,"op":"holds.list"}', id: null, code: "malformed" },
  { why: "a fractional id", line: '{"id":1.5,"op":"holds.list"}', id: null, code: "malformed" },
  { why: "a string id", line: '{"id":"1","op":"holds.list"}', id: null, code: "malformed" },
  { why: "no op", line: '{"id":4}', id: 4, code: "malformed", names: /op/ },
  {
    why: "an unknown op",
    line: '{"id":5,"op":"file.read","args":{}}',
    id: 5,
    code: "unknown-op",
    names: /"file.read"/,
  },
  { why: "a shell op", line: '{"id":6,"op":"exec","args":{"cmd":"sh"}}', id: 6, code: "unknown-op", names: /"exec"/ },
  {
    why: "an unknown top-level field",
    line: '{"id":7,"op":"holds.list","as":"root"}',
    id: 7,
    code: "unknown-field",
    names: /field as/,
  },
  {
    why: "an unknown argument",
    line: '{"id":8,"op":"holds.list","args":{"dir":"/"}}',
    id: 8,
    code: "unknown-field",
    names: /args\.dir/,
  },
  {
    why: "a bad argument",
    line: '{"id":9,"op":"gpu.reset","args":{"gpuUuid":"x"}}',
    id: 9,
    code: "invalid-argument",
    names: /gpuUuid "x"/,
  },
];

Deno.test("the request decoder refuses each bad line by name and keeps the id when it can", async (t) => {
  for (const b of BAD_REQUESTS) {
    await t.step(b.why, () => {
      assert.throws(() => decodeRequest(b.line), (e) => {
        assert.ok(e instanceof RequestRefused);
        assert.equal(e.id, b.id);
        assert.equal(e.error.code, b.code);
        if (b.names) assert.match(e.error.message, b.names);
        return true;
      });
    });
  }
});

Deno.test("the answer decoder refuses what is not an answer", () => {
  for (
    const line of [
      "nope",
      "[]",
      '{"id":1}',
      '{"id":1,"ok":true}',
      '{"ok":true,"result":{}}',
      '{"id":1,"ok":false}',
      '{"id":1,"ok":false,"error":{"code":"root","message":"x"}}',
    ]
  ) {
    assert.throws(() => decodeAnswer(line), (e) => e instanceof HelperError && e.code === "malformed", line);
  }
});
