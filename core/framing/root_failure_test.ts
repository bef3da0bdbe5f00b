import assert from "node:assert/strict";
import { BodyError } from "./errors.ts";
import { decodeReady, decodeRootFailure, encodeReady, encodeRootFailure, ROOT_STAGES } from "./root_failure.ts";

Deno.test("the stage table: codes 1–5, statuses 11–15, each round-trips", async (t) => {
  const want = [
    ["configuration", 1, 11],
    ["layout", 2, 12],
    ["bootstrap", 3, 13],
    ["assembly", 4, 14],
    ["teardown", 5, 15],
  ];
  assert.deepEqual(ROOT_STAGES.map((s) => [s.stage, s.code, s.status]), want);
  for (const s of ROOT_STAGES) {
    await t.step(s.stage, () => {
      const body = encodeRootFailure({ stage: s.stage, problem: "the image is wrong ✗" });
      assert.equal(body[0], s.code);
      assert.deepEqual(decodeRootFailure(body), { stage: s.stage, problem: "the image is wrong ✗" });
    });
  }
});

Deno.test("failures that do not decode: no stage, stage 0 or 6, a problem that is not UTF-8", () => {
  for (const b of [[], [0], [6, 65], [1, 0xff]]) {
    assert.throws(() => decodeRootFailure(Uint8Array.from(b)), BodyError, JSON.stringify(b));
  }
});

Deno.test("Ready carries the build: 1–255 printable ASCII characters without a space", () => {
  assert.deepEqual([...encodeReady("0.1.0")], [5, ...new TextEncoder().encode("0.1.0")]);
  assert.equal(decodeReady(encodeReady("0.1.0")), "0.1.0");
  assert.equal(decodeReady(encodeReady("x".repeat(255))), "x".repeat(255));
  for (const bad of ["", "a b", "é", "a\tb", "x".repeat(256)]) assert.throws(() => encodeReady(bad), BodyError, bad);
  for (const b of [[], [0], [3, 97, 98], [1, 97, 98], [1, 0x20], [1, 0x7f]]) {
    assert.throws(() => decodeReady(Uint8Array.from(b)), BodyError, JSON.stringify(b));
  }
});
