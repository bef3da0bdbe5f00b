import assert from "node:assert/strict";
import { verifyEd25519 } from "./ed25519.ts";
import { verifyEd25519Sync } from "./ed25519_sync.ts";
import { Ed25519Thread, verifyEd25519Batched } from "./ed25519_thread.ts";

const VECTORS = new URL("../../fixtures/wycheproof/ed25519_test.json", import.meta.url);

interface Vector {
  tcId: number;
  comment: string;
  msg: string;
  sig: string;
  result: "valid" | "invalid";
}

function hex(s: string): Uint8Array {
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  return out;
}

async function load(): Promise<{ groups: { publicKey: { pk: string }; tests: Vector[] }[]; count: number } | null> {
  try {
    const d = JSON.parse(await Deno.readTextFile(VECTORS));
    return { groups: d.testGroups, count: d.numberOfTests };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

const data = await load();
if (data === null) console.warn(`skipping Wycheproof: ${VECTORS.pathname} is absent (copied from ../shared/vectors)`);

Deno.test({
  name:
    "verifyEd25519(), verifyEd25519Sync() and the Ed25519 thread (one at a time and all in one batch) give exactly the expected result for all 151 Wycheproof Ed25519 vectors",
  ignore: data === null,
  fn: async () => {
    const d = data!;
    let seen = 0;
    const wrong: string[] = [];
    const thread = new Ed25519Thread();
    const batched: { t: Vector; verdict: Promise<boolean> }[] = [];
    try {
      for (const g of d.groups) {
        const pk = hex(g.publicKey.pk);
        for (const t of g.tests) {
          seen++;
          const got = await verifyEd25519(pk, hex(t.sig), hex(t.msg)) ? "valid" : "invalid";
          if (got !== t.result) wrong.push(`tcId ${t.tcId} (${t.comment}): got ${got}, want ${t.result}`);
          const sync = verifyEd25519Sync(pk, hex(t.sig), hex(t.msg)) ? "valid" : "invalid";
          if (sync !== t.result) wrong.push(`tcId ${t.tcId} (${t.comment}), sync: got ${sync}, want ${t.result}`);
          const one = await verifyEd25519Batched(pk, hex(t.sig), hex(t.msg)) ? "valid" : "invalid";
          if (one !== t.result) wrong.push(`tcId ${t.tcId} (${t.comment}), thread: got ${one}, want ${t.result}`);
        }
      }
      for (const g of d.groups) {
        for (const t of g.tests) {
          batched.push({ t, verdict: thread.verify(hex(g.publicKey.pk), hex(t.sig), hex(t.msg)) });
        }
      }
      for (const { t, verdict } of batched) {
        const got = await verdict ? "valid" : "invalid";
        if (got !== t.result) wrong.push(`tcId ${t.tcId} (${t.comment}), one batch: got ${got}, want ${t.result}`);
      }
      // Asked for in one turn: the 139 requests of the right lengths (the other 12 are answered without the thread)
      // in ceil(139 / 64) messages.
      assert.equal(thread.stats.verifies, 139);
      assert.equal(thread.stats.batches, 3);
    } finally {
      await thread.close();
    }
    assert.equal(seen, 151);
    assert.equal(d.count, 151);
    assert.deepEqual(wrong, []);
  },
});

Deno.test("verifyEd25519() and the Ed25519 thread refuse keys and signatures of the wrong length without throwing", async () => {
  for (const [k, s] of [[31, 64], [33, 64], [32, 63], [32, 65], [0, 0]] as const) {
    assert.equal(await verifyEd25519Batched(new Uint8Array(k), new Uint8Array(s), new Uint8Array()), false);
  }
  assert.equal(await verifyEd25519(new Uint8Array(31), new Uint8Array(64), new Uint8Array()), false);
  assert.equal(await verifyEd25519(new Uint8Array(32), new Uint8Array(63), new Uint8Array()), false);
  assert.equal(await verifyEd25519(new Uint8Array(32), new Uint8Array(65), new Uint8Array()), false);
});

Deno.test("verifyEd25519(), verifyEd25519Sync() and the Ed25519 thread answer false, never throw, for a key that is no curve point, and agree with WebCrypto's verdicts", async () => {
  const kp = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const pk = new Uint8Array(await crypto.subtle.exportKey("raw", kp.publicKey));
  const msg = new TextEncoder().encode("bcd");
  const sig = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, kp.privateKey, msg));
  const webcrypto = (k: Uint8Array, s: Uint8Array) =>
    crypto.subtle.importKey("raw", k.slice(), { name: "Ed25519" }, false, ["verify"]).then(
      (key) => crypto.subtle.verify({ name: "Ed25519" }, key, s.slice(), msg.slice()),
      () => false,
    );
  const flipped = sig.slice();
  flipped[10]! ^= 1;
  const notAPoint = new Uint8Array(32).fill(0xff);
  for (const [k, s, want] of [[pk, sig, true], [pk, flipped, false], [notAPoint, sig, false]] as const) {
    assert.equal(verifyEd25519Sync(k, s, msg), want);
    assert.equal(await verifyEd25519(k, s, msg), want);
    assert.equal(await verifyEd25519Batched(k, s, msg), want);
    assert.equal(await webcrypto(k, s), want);
  }
  // The cached key of a second call gives the same verdicts.
  assert.equal(verifyEd25519Sync(pk, sig, msg), true);
  assert.equal(verifyEd25519Sync(pk, flipped, msg), false);
  assert.equal(await verifyEd25519(pk, sig, msg), true);
  assert.equal(await verifyEd25519(pk, flipped, msg), false);
  assert.equal(await verifyEd25519(notAPoint, sig, msg), false, "a refused key is not cached as a good one");
  // Views into a larger buffer (as a decoded frame hands them over) are read over their own bytes only.
  const frame = new Uint8Array(8 + sig.length + 8 + msg.length + 8);
  frame.set(sig, 8);
  frame.set(msg, 8 + sig.length + 8);
  const sigView = frame.subarray(8, 8 + sig.length);
  const msgView = frame.subarray(8 + sig.length + 8, 8 + sig.length + 8 + msg.length);
  assert.equal(await verifyEd25519(pk, sigView, msgView), true);
  assert.equal(await verifyEd25519Batched(pk, sigView, msgView), true);
  assert.equal(await verifyEd25519Batched(notAPoint, sig, msg), false, "the thread caches no refused key either");
});
