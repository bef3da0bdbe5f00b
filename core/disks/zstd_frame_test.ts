import assert from "node:assert/strict";
import { zstdCompressSync } from "node:zlib";
import { zstdFrameLength } from "./zstd_frame.ts";

Deno.test("zstdFrameLength finds the end of the first frame, whatever follows it, and refuses a cut or foreign one", () => {
  const data = new Uint8Array(65536).map((_, i) => (i * 7) % 251);
  const frame = zstdCompressSync(data);
  const next = zstdCompressSync(new Uint8Array(100));
  const joined = new Uint8Array(frame.length + next.length + 17);
  joined.set(frame);
  joined.set(next, frame.length);
  assert.equal(zstdFrameLength(frame), frame.length);
  assert.equal(zstdFrameLength(joined), frame.length, "another cluster's frame after it is not part of it");
  assert.equal(zstdFrameLength(frame.subarray(0, frame.length - 1)), undefined, "a cut frame");
  assert.equal(zstdFrameLength(new Uint8Array(16)), undefined, "no magic");
  const reserved = frame.slice();
  reserved[4]! |= 0x08;
  assert.equal(zstdFrameLength(reserved), undefined, "the reserved header bit");
});
