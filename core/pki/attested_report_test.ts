import assert from "node:assert/strict";
import { attestReport, openAttestedReport } from "./attested_report.ts";
import { generateSigningKeyPair } from "./ed25519.ts";

Deno.test("an AllocationBound report is node-signed over its exact bytes and opens only for its node and key", async () => {
  const node = await generateSigningKeyPair();
  const other = await generateSigningKeyPair();
  const r = await attestReport(node.privateKey, {
    node_id: "node-1",
    generation: 7,
    allocation_bound: { allocation_id: "alloc-1", cdi_devices: ["bcd.dev/gpu=GPU-1"] },
  });
  const body = await openAttestedReport(node.publicKey, "node-1", r);
  assert.equal(body?.allocation_bound?.allocation_id, "alloc-1");
  assert.deepEqual(body?.allocation_bound?.cdi_devices, ["bcd.dev/gpu=GPU-1"]);
  assert.equal(await openAttestedReport(other.publicKey, "node-1", r), null, "another node's key");
  assert.equal(await openAttestedReport(node.publicKey, "node-2", r), null, "a body naming another node");
  const tampered = { ...r, body: r.body.slice() };
  tampered.body[tampered.body.length - 1]! ^= 1;
  assert.equal(await openAttestedReport(node.publicKey, "node-1", tampered), null, "one byte changed");
});
