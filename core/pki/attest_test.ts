import assert from "node:assert/strict";
import { signAttestedReport, signCommandResult, verifyAttestedReport, verifyCommandResult } from "./attest.ts";
import { generateSigningKeyPair } from "./ed25519.ts";

const RESULT = new TextEncoder().encode('{"gpus":[{"uuid":"GPU-1","reset":true}]}');

Deno.test("node_sig covers the command id, the state and the result's SHA-256", async (t) => {
  const node = await generateSigningKeyPair();
  const sig = await signCommandResult(node.privateKey, "01CMD", "SUCCEEDED", RESULT);
  assert.equal(await verifyCommandResult(node.publicKey, "01CMD", "SUCCEEDED", RESULT, sig), true);
  await t.step("another command id", async () => {
    assert.equal(await verifyCommandResult(node.publicKey, "01CME", "SUCCEEDED", RESULT, sig), false);
  });
  await t.step("another state", async () => {
    assert.equal(await verifyCommandResult(node.publicKey, "01CMD", "FAILED", RESULT, sig), false);
  });
  await t.step("another result", async () => {
    assert.equal(await verifyCommandResult(node.publicKey, "01CMD", "SUCCEEDED", RESULT.subarray(1), sig), false);
  });
  await t.step("never verifies as an attested report", async () => {
    assert.equal(await verifyAttestedReport(node.publicKey, RESULT, sig), false);
  });
});

Deno.test("an AttestedReport signature verifies over the exact body with the node key only", async () => {
  const node = await generateSigningKeyPair();
  const other = await generateSigningKeyPair();
  const sig = await signAttestedReport(node.privateKey, RESULT);
  assert.equal(await verifyAttestedReport(node.publicKey, RESULT, sig), true);
  assert.equal(await verifyAttestedReport(other.publicKey, RESULT, sig), false);
  assert.equal(await verifyAttestedReport(node.publicKey, new Uint8Array([...RESULT, 0x20]), sig), false);
});
