import assert from "node:assert/strict";
import { signEnvelope, verifyEnvelope } from "./envelope.ts";
import { SignatureError, type SignatureFailure } from "./signature_error.ts";
import { makeTestPki } from "./pki_testing.ts";
import { encodeJson } from "./codec.ts";
import { verifyEd25519 } from "./ed25519.ts";
import { VerifierThreadError } from "./ed25519_thread.ts";
import { signedMessage } from "./purpose.ts";

const BODY = new TextEncoder().encode("\x0a\x1a01HZY0000000000000000000CMD\x12\x05node1");
const NOW = 1_800_000_000_000;

async function refusal(p: Promise<unknown>): Promise<SignatureFailure> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SignatureError) {
      assert.equal(e.reason, "BAD_SIGNATURE");
      return e.failure;
    }
    throw e;
  }
  assert.fail("the signature was accepted");
}

Deno.test("verifyEnvelope() accepts a worker signature over the exact body bytes", async () => {
  const pki = await makeTestPki();
  const env = await signEnvelope(pki.worker, "command", BODY);
  const cert = await verifyEnvelope(pki.bundle.commandSigningRoots, "command", BODY, env, NOW);
  assert.equal(cert.statement.serial, "test-worker-1");
});

Deno.test("a command signature never verifies as a desired-state signature", async (t) => {
  const pki = await makeTestPki({ purposes: ["command", "desired-state"] });
  const env = await signEnvelope(pki.worker, "command", BODY);
  await t.step("as received", async () => {
    assert.equal(
      await refusal(verifyEnvelope(pki.bundle.commandSigningRoots, "desired-state", BODY, env, NOW)),
      "wrong-purpose",
    );
  });
  await t.step("with the envelope's purpose claim rewritten", async () => {
    const o = JSON.parse(new TextDecoder().decode(env));
    o.purpose = "desired-state";
    assert.equal(
      await refusal(verifyEnvelope(pki.bundle.commandSigningRoots, "desired-state", BODY, encodeJson(o), NOW)),
      "invalid",
    );
  });
  await t.step("and the reverse", async () => {
    const spec = await signEnvelope(pki.worker, "desired-state", BODY);
    assert.equal(
      await refusal(verifyEnvelope(pki.bundle.commandSigningRoots, "command", BODY, spec, NOW)),
      "wrong-purpose",
    );
  });
});

Deno.test("verifyEnvelope() refusals, one per failure", async (t) => {
  const pki = await makeTestPki();
  const other = await makeTestPki();
  const env = await signEnvelope(pki.worker, "command", BODY);
  const roots = pki.bundle.commandSigningRoots;
  const flipped = BODY.slice();
  flipped[3]! ^= 1;
  const rows: [string, () => Promise<unknown>, SignatureFailure][] = [
    ["no signature", () => verifyEnvelope(roots, "command", BODY, undefined, NOW), "missing"],
    ["an empty signature", () => verifyEnvelope(roots, "command", BODY, new Uint8Array(), NOW), "missing"],
    [
      "bytes that are not an envelope",
      () => verifyEnvelope(roots, "command", BODY, new Uint8Array(64), NOW),
      "malformed",
    ],
    ["one body byte changed", () => verifyEnvelope(roots, "command", flipped, env, NOW), "invalid"],
    [
      "a re-encoding of the body (a trailing byte)",
      () => verifyEnvelope(roots, "command", new Uint8Array([...BODY, 0]), env, NOW),
      "invalid",
    ],
    [
      "a worker of another root",
      () => verifyEnvelope(other.bundle.commandSigningRoots, "command", BODY, env, NOW),
      "unknown-key",
    ],
    ["before the certificate's window", () => verifyEnvelope(roots, "command", BODY, env, -1), "certificate-expired"],
    [
      "after the certificate's window",
      () => verifyEnvelope(roots, "command", BODY, env, 9_000_000_000_000),
      "certificate-expired",
    ],
  ];
  for (const [name, f, want] of rows) {
    await t.step(name, async () => assert.equal(await refusal(f()), want));
  }
  await t.step("a certificate that does not allow the purpose", async () => {
    const specOnly = await makeTestPki({ purposes: ["desired-state"] });
    const e2 = await signEnvelope(specOnly.worker, "command", BODY);
    assert.equal(
      await refusal(verifyEnvelope(specOnly.bundle.commandSigningRoots, "command", BODY, e2, NOW)),
      "wrong-purpose",
    );
  });
  await t.step("a certificate whose statement was altered after the root signed it", async () => {
    const o = JSON.parse(new TextDecoder().decode(env));
    const st = JSON.parse(atob(o.cert.statement));
    st.not_after = 9_999_999_999_999;
    o.cert.statement = btoa(JSON.stringify(st));
    assert.equal(await refusal(verifyEnvelope(roots, "command", BODY, encodeJson(o), NOW)), "certificate-invalid");
  });
  await t.step(
    "a root signature altered after the genuine certificate was verified (and its decoding kept)",
    async () => {
      assert.ok(await verifyEnvelope(roots, "command", BODY, env, NOW));
      const o = JSON.parse(new TextDecoder().decode(env));
      const sig = Uint8Array.from(atob(o.cert.sig), (c) => c.charCodeAt(0));
      sig[5]! ^= 1;
      o.cert.sig = btoa(String.fromCharCode(...sig));
      assert.equal(await refusal(verifyEnvelope(roots, "command", BODY, encodeJson(o), NOW)), "certificate-invalid");
      assert.ok(await verifyEnvelope(roots, "command", BODY, env, NOW), "the genuine one still verifies");
    },
  );
  await t.step("an oversized envelope is refused before it is parsed", async () => {
    assert.equal(await refusal(verifyEnvelope(roots, "command", BODY, new Uint8Array(100_000), NOW)), "malformed");
  });
});

Deno.test("verifyEnvelope() hands the worker key's check to its verifier and gives no verdict when that cannot decide", async () => {
  const pki = await makeTestPki();
  const env = await signEnvelope(pki.worker, "command", BODY);
  const roots = pki.bundle.commandSigningRoots;
  const asked: Uint8Array[] = [];
  const cert = await verifyEnvelope(roots, "command", BODY, env, NOW, (k, s, m) => {
    asked.push(k, m);
    return verifyEd25519(k, s, m);
  });
  assert.deepEqual(asked, [pki.worker.key.publicKey, signedMessage("command", BODY)]);
  assert.equal(cert.statement.serial, "test-worker-1");
  const failed = new VerifierThreadError("the Ed25519 verifier thread failed (test)");
  await assert.rejects(
    verifyEnvelope(roots, "command", BODY, env, NOW, () => Promise.reject(failed)),
    (e) => e === failed,
  );
});
