import assert from "node:assert/strict";
import { fromBase64, PkiFormatError, toBase64 } from "./codec.ts";

/** The decoding fromBase64 had before it used `Uint8Array.fromBase64`: atob, byte by byte. */
function atobBytes(s: string): Uint8Array {
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}

Deno.test("fromBase64() decodes standard base64 byte for byte as atob does, padding bits included", () => {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let seed = 7;
  const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  for (let i = 0; i < 2000; i++) {
    // Random bodies of 0..9 chars' worth of groups, ending in 0, 1 or 2 '=' (with padding bits that may be set).
    let s = "";
    for (let j = 0, n = 4 * next(4); j < n; j++) s += alphabet[next(64)];
    const pad = next(3);
    if (pad > 0) s += alphabet.slice(0, 4 - pad).split("").map(() => alphabet[next(64)]).join("") + "=".repeat(pad);
    assert.deepEqual(fromBase64("f", s, 64), atobBytes(s), s);
  }
  const bytes = new Uint8Array(64).map((_, i) => (i * 37) & 0xff);
  assert.deepEqual(fromBase64("sig", toBase64(bytes), 64), bytes);
});

Deno.test("fromBase64() refuses whitespace, URL-safe letters, stray or missing padding, other types and oversize", () => {
  for (const bad of ["AA AA", "AA\nA", "AA-_", "A===", "AAA", "AA=A", "=AAA", "AAAA====", 12, null]) {
    assert.throws(() => fromBase64("f", bad, 64), PkiFormatError, String(bad));
  }
  assert.throws(() => fromBase64("sig", "A".repeat(100), 64), /longer than 64 bytes/);
});
