import assert from "node:assert/strict";
import { bcd, decodeMessage, encodeMessage, packPayload, unpackResult } from "../../proto/mod.ts";
import { signEnvelope, verifyEnvelope } from "../pki/envelope.ts";
import { makeTestPki } from "../pki/test_pki.ts";
import { CommandDecodeError, incomingFromWire, updateToWire } from "./wire.ts";
import { nodeRebootResult, terminalUpdate } from "./results.ts";

const NOW = Date.UTC(2026, 10, 30, 7, 0, 0);

function bodyBytes(): Uint8Array {
  return encodeMessage(bcd.v1.CommandBody, {
    id: "01HZZCMD0000000000000000001",
    node_id: "node-1",
    seq: 42,
    kind: "logs.collect",
    payload: packPayload("logs.collect", { upload_url: "https://example.test/up" }),
    lane: "bulk",
    not_after: { seconds: NOW / 1000 + 60, nanos: 500_000_000 },
    min_generation: 3,
    retry_safe: true,
    batch_id: "",
  });
}

Deno.test("incomingFromWire() decodes the body and keeps its exact bytes for the signature", async () => {
  const pki = await makeTestPki();
  const bytes = bodyBytes();
  const signature = await signEnvelope(pki.worker, "command", bytes);
  const cmd = incomingFromWire({ body: bytes, signature, attempt: 2 });
  assert.equal(cmd.body.id, "01HZZCMD0000000000000000001");
  assert.equal(cmd.body.seq, 42);
  assert.equal(cmd.body.notAfterMs, NOW + 60_500);
  assert.equal(cmd.body.minGeneration, 3);
  assert.equal(cmd.body.payload?.typeUrl, "type.googleapis.com/bcd.v1.LogsCollectPayload");
  assert.equal(cmd.attempt, 2);
  assert.equal(cmd.batchApproval, undefined);
  await verifyEnvelope(pki.bundle.commandSigningRoots, "command", cmd.bodyBytes, cmd.signature, NOW);
});

Deno.test("a re-encoding of the same body (an unknown field appended) does not verify", async () => {
  const pki = await makeTestPki();
  const bytes = bodyBytes();
  const signature = await signEnvelope(pki.worker, "command", bytes);
  const reencoded = new Uint8Array([...bytes, 0xa8, 0x06, 0x01]); // field 101, varint 1: decodes to the same body
  const cmd = incomingFromWire({ body: reencoded, signature });
  assert.equal(cmd.body.id, "01HZZCMD0000000000000000001");
  await assert.rejects(verifyEnvelope(pki.bundle.commandSigningRoots, "command", cmd.bodyBytes, cmd.signature, NOW));
});

Deno.test("a command without not_after decodes with no deadline (EXPIRED at acceptance)", () => {
  const bytes = encodeMessage(bcd.v1.CommandBody, { id: "x", node_id: "n", kind: "inventory.refresh" });
  assert.equal(incomingFromWire({ body: bytes }).body.notAfterMs, undefined);
});

Deno.test("a body that does not decode is a CommandDecodeError", () => {
  assert.throws(() => incomingFromWire({ body: new Uint8Array([0x0a, 0x50, 0x01]) }), CommandDecodeError);
});

Deno.test("updateToWire() carries state, codes, boot id, result and node_sig; a rebooted result names the previous boot", async () => {
  const u = await terminalUpdate("c1", "node.reboot", {
    state: "SUCCEEDED",
    bootId: "boot-2",
    rebooted: true,
    previousBootId: "boot-1",
  }, undefined);
  const wire = decodeMessage(bcd.v1.CommandUpdate, encodeMessage(bcd.v1.CommandUpdate, updateToWire(u)));
  assert.equal(wire.state, bcd.v1.CommandUpdate.State.SUCCEEDED);
  assert.equal(wire.boot_id, "boot-2");
  const r = unpackResult("node.reboot", wire.result);
  assert.equal(r.previous_boot_id, "boot-1");
  assert.equal(r.rebooted, true);
  assert.deepEqual(nodeRebootResult("b").typeUrl, "type.googleapis.com/bcd.v1.NodeRebootResult");
  const rej = updateToWire({ commandId: "c2", kind: "k", state: "REJECTED", reason: "BUSY", bootId: "b" });
  assert.equal(rej.reason, "BUSY");
  assert.equal(rej.state, bcd.v1.CommandUpdate.State.REJECTED);
});
