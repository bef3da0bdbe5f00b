import assert from "node:assert/strict";
import { COPY_BELOW, encodeFrame, frameParts } from "./encoder.ts";
import { FramingError } from "./errors.ts";
import { Kind } from "./frame_kinds.ts";

const concat = (parts: Uint8Array[]) => new Uint8Array(parts.flatMap((p) => [...p]));

Deno.test("frameParts writes a small message as one buffer and a large one as its header and the body itself", () => {
  const small = new Uint8Array(16).fill(4);
  const parts = frameParts(Kind.Echo, small);
  assert.equal(parts.length, 1);
  assert.deepEqual(parts[0], encodeFrame(Kind.Echo, small));

  const large = new Uint8Array(COPY_BELOW).map((_, i) => i & 0xff);
  const two = frameParts(Kind.Echo, large);
  assert.equal(two.length, 2);
  assert.equal(two[1], large, "the body is not copied");
  assert.deepEqual(concat(two), encodeFrame(Kind.Echo, large));
});

Deno.test("frameParts refuses what encodeFrame refuses, before anything is written", () => {
  assert.throws(() => frameParts(200, new Uint8Array(COPY_BELOW)), (e: unknown) => e instanceof FramingError);
  assert.throws(
    () => frameParts(Kind.Ping, new Uint8Array(COPY_BELOW)),
    (e: unknown) => e instanceof FramingError && e.reason === "oversized",
  );
});
