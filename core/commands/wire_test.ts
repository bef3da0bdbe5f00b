import assert from "node:assert/strict";
import { bcd, decodeMessage, encodeMessage, packPayload, unpackResult } from "../../proto/mod.ts";
import { signEnvelope, verifyEnvelope } from "../pki/envelope.ts";
import { makeTestPki } from "../pki/pki_testing.ts";
import {
  CommandDecodeError,
  incomingFromWire,
  MAX_COMMAND_ID_BYTES,
  MAX_COMMAND_KIND_BYTES,
  MAX_COMMAND_STRING_BYTES,
  updateToWire,
} from "./wire.ts";
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

Deno.test("incomingFromWire() refuses an empty id, and ids, kinds and journaled strings over their bounds", async (t) => {
  const base = { id: "c-1", node_id: "node-1", kind: "inventory.refresh" };
  const rows: { name: string; body: Record<string, unknown>; ok: boolean; match?: RegExp }[] = [
    { name: "an ordinary body", body: base, ok: true },
    { name: "an empty id", body: { ...base, id: "" }, ok: false, match: /empty id/ },
    { name: "an id of 128 bytes", body: { ...base, id: "i".repeat(MAX_COMMAND_ID_BYTES) }, ok: true },
    { name: "an id of 129 bytes", body: { ...base, id: "i".repeat(129) }, ok: false, match: /id of 129 bytes/ },
    { name: "an id of 43 three-byte characters (129 bytes)", body: { ...base, id: "€".repeat(43) }, ok: false },
    {
      name: "a kind of 1,000,000 characters",
      body: { ...base, kind: "k".repeat(1_000_000) },
      ok: false,
      match: /kind/,
    },
    { name: "a kind of 64 bytes", body: { ...base, kind: "k".repeat(MAX_COMMAND_KIND_BYTES) }, ok: true },
    { name: "an idempotency key over 256 bytes", body: { ...base, idempotency_key: "x".repeat(257) }, ok: false },
    { name: "a workflow id over 256 bytes", body: { ...base, workflow_id: "x".repeat(257) }, ok: false },
    { name: "a step id over 256 bytes", body: { ...base, step_id: "x".repeat(257) }, ok: false },
    {
      name: "a batch id over 256 bytes",
      body: { ...base, batch_id: "x".repeat(MAX_COMMAND_STRING_BYTES + 1) },
      ok: false,
    },
  ];
  for (const r of rows) {
    await t.step(r.name, () => {
      const body = encodeMessage(bcd.v1.CommandBody, r.body);
      if (r.ok) assert.ok(incomingFromWire({ body }));
      else {
        assert.throws(
          () => incomingFromWire({ body }),
          (e) => e instanceof CommandDecodeError && (!r.match || r.match.test(e.message)),
        );
      }
    });
  }
});
