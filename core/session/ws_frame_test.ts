import assert from "node:assert/strict";
import { applyWsMask, encodeWsFrame, readWsFrameHeader, WsOpcode } from "./ws_frame.ts";

Deno.test("encodeWsFrame(): masked frames unmask to their payload, with keys from the CSPRNG drawn in bulk", () => {
  const real = crypto.getRandomValues.bind(crypto);
  let calls = 0;
  crypto.getRandomValues = (<T extends ArrayBufferView | null>(a: T): T => {
    calls++;
    return real(a as ArrayBufferView) as T;
  }) as typeof crypto.getRandomValues;
  const keys = new Set<string>();
  try {
    for (let i = 0; i < 2048; i++) {
      const payload = new TextEncoder().encode(`frame ${i}`);
      const frame = encodeWsFrame(WsOpcode.binary, payload, { mask: true });
      const h = readWsFrameHeader(frame)!;
      assert.equal(h.masked, true);
      assert.equal(h.payloadLength, payload.length);
      const body = frame.slice(h.headerLength);
      applyWsMask(body, h.mask!);
      assert.deepEqual(body, payload);
      keys.add(h.mask!.join(","));
    }
  } finally {
    crypto.getRandomValues = real;
  }
  // One call per 1,024 keys (4 KiB of random bytes), not one per frame; every key is 4 fresh random bytes, so 2048
  // of them repeat with a chance of about 2^-11 in all.
  assert.ok(calls <= 3, `${calls} calls to getRandomValues for 2048 frames`);
  assert.ok(keys.size >= 2046, `${keys.size} distinct keys of 2048`);
});

Deno.test("encodeWsFrame(): an unmasked frame carries its payload as is, with 16- and 64-bit lengths", () => {
  for (const n of [0, 125, 126, 65535, 65536]) {
    const payload = new Uint8Array(n).fill(7);
    const frame = encodeWsFrame(WsOpcode.binary, payload);
    const h = readWsFrameHeader(frame)!;
    assert.equal(h.masked, false);
    assert.equal(h.payloadLength, n);
    assert.deepEqual(frame.subarray(h.headerLength), payload);
  }
});
