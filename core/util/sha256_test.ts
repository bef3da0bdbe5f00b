import assert from "node:assert/strict";
import { createHash, createHmac } from "node:crypto";
import { hexOf, hmacSha256Sync, sha256HexSync, sha256Sync } from "./sha256.ts";

Deno.test("sha256HexSync gives the FIPS 180-4 example digests", () => {
  assert.equal(sha256HexSync(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(sha256HexSync("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(
    sha256HexSync("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  assert.equal(
    sha256HexSync("a".repeat(1_000_000)),
    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
  );
});

Deno.test("sha256Sync equals node:crypto's SHA-256 for every length 0..300 around the block and padding edges, strings and views", () => {
  let seed = 7;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  for (let n = 0; n <= 300; n++) {
    const backing = new Uint8Array(n + 5);
    for (let i = 0; i < backing.length; i++) backing[i] = next();
    const bytes = backing.subarray(3, 3 + n); // a view at an offset into a larger buffer
    assert.equal(sha256HexSync(bytes), createHash("sha256").update(bytes).digest("hex"), `length ${n}`);
    const text = "é€" + "x".repeat(n); // multi-byte UTF-8
    assert.equal(sha256HexSync(text), createHash("sha256").update(text, "utf8").digest("hex"), `text ${n}`);
  }
  assert.deepEqual(sha256Sync("abc"), new Uint8Array(createHash("sha256").update("abc").digest()));
});

Deno.test("hmacSha256Sync gives RFC 4231's test case 2 and node:crypto's HMAC for keys of 0..140 bytes", () => {
  const enc = new TextEncoder();
  assert.equal(
    hexOf(hmacSha256Sync(enc.encode("Jefe"), "what do ya want for nothing?")),
    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
  );
  let seed = 11;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  for (let n = 0; n <= 140; n++) {
    const key = Uint8Array.from({ length: n }, next);
    const msg = `bcd-turns-v1|host|${n}|` + "m".repeat(n * 3);
    assert.equal(hexOf(hmacSha256Sync(key, msg)), createHmac("sha256", key).update(msg).digest("hex"), `key ${n}`);
  }
});
