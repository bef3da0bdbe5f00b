import assert from "node:assert/strict";
import { approveScope, type BatchLeaf, buildBatch, encodeBatchApproval, QuorumError, verifyBatch } from "./quorum.ts";
import { QuorumLedger } from "./quorum_ledger.ts";
import { makeTestPki } from "./pki_testing.ts";
import { generateSigningKeyPair } from "./ed25519.ts";
import { encodeJson } from "./codec.ts";

const NOW = 1_800_000_000_000;
const LEAVES: BatchLeaf[] = [
  { subject: "node-a", kind: "gpu.reset" },
  { subject: "node-b", kind: "gpu.reset" },
  { subject: "node-c", kind: "node.reboot" },
];

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof QuorumError) return e.reason;
    throw e;
  }
  return "admitted";
}

Deno.test("verifyBatch() table", async (t) => {
  const pki = await makeTestPki({ approvers: 3, threshold: 2 });
  const [a1, a2, a3] = pki.approvers as [never, never, never];
  const batch = await buildBatch("batch-1", LEAVES, NOW + 3_600_000);
  const sigs = await Promise.all([a1, a2, a3].map((a) => approveScope(a, batch.scopeBytes)));
  const stranger = await approveScope(await generateSigningKeyPair(), batch.scopeBytes);
  const other = await buildBatch("batch-2", LEAVES, NOW + 3_600_000);
  const otherSigs = await Promise.all([a1, a2].map((a) => approveScope(a, other.scopeBytes)));
  const expired = await buildBatch("batch-1", LEAVES, NOW - 1);
  const expiredSigs = await Promise.all([a1, a2].map((a) => approveScope(a, expired.scopeBytes)));
  const badSig = { key: sigs[1]!.key, sig: sigs[0]!.sig };
  const p1 = await batch.proof(1);
  const rows: [string, BatchLeaf, Uint8Array | undefined, Uint8Array | undefined, string][] = [
    [
      "two distinct approvers, own leaf",
      LEAVES[1]!,
      encodeBatchApproval(batch.scopeBytes, sigs.slice(0, 2)),
      p1,
      "admitted",
    ],
    ["all three approvers", LEAVES[1]!, encodeBatchApproval(batch.scopeBytes, sigs), p1, "admitted"],
    ["too few approvers", LEAVES[1]!, encodeBatchApproval(batch.scopeBytes, sigs.slice(0, 1)), p1, "BATCH_UNAPPROVED"],
    [
      "one approver twice",
      LEAVES[1]!,
      encodeBatchApproval(batch.scopeBytes, [sigs[0]!, sigs[0]!]),
      p1,
      "BATCH_UNAPPROVED",
    ],
    [
      "an approver not in the bundle",
      LEAVES[1]!,
      encodeBatchApproval(batch.scopeBytes, [sigs[0]!, stranger]),
      p1,
      "BATCH_UNAPPROVED",
    ],
    [
      "a signature by another approver's key",
      LEAVES[1]!,
      encodeBatchApproval(batch.scopeBytes, [sigs[0]!, badSig]),
      p1,
      "BATCH_UNAPPROVED",
    ],
    ["a proof for another leaf", LEAVES[0]!, encodeBatchApproval(batch.scopeBytes, sigs), p1, "BATCH_UNAPPROVED"],
    [
      "a leaf not in the batch",
      { subject: "node-z", kind: "gpu.reset" },
      encodeBatchApproval(batch.scopeBytes, sigs),
      p1,
      "BATCH_UNAPPROVED",
    ],
    [
      "the scope of another batch",
      LEAVES[1]!,
      encodeBatchApproval(other.scopeBytes, otherSigs),
      await other.proof(1),
      "BATCH_UNAPPROVED",
    ],
    [
      "a scope past its not_after",
      LEAVES[1]!,
      encodeBatchApproval(expired.scopeBytes, expiredSigs),
      await expired.proof(1),
      "BATCH_UNAPPROVED",
    ],
    ["no approval", LEAVES[1]!, undefined, p1, "BATCH_UNAPPROVED"],
    ["no proof", LEAVES[1]!, encodeBatchApproval(batch.scopeBytes, sigs), undefined, "BATCH_UNAPPROVED"],
    ["an undecodable approval", LEAVES[1]!, new Uint8Array([1, 2, 3]), p1, "BATCH_UNAPPROVED"],
    [
      "an undecodable proof",
      LEAVES[1]!,
      encodeBatchApproval(batch.scopeBytes, sigs),
      encodeJson({ v: 1, index: -1, path: [] }),
      "BATCH_UNAPPROVED",
    ],
  ];
  for (const [name, leaf, approval, proof, want] of rows) {
    await t.step(name, async () => {
      assert.equal(await reason(verifyBatch(pki.bundle, "batch-1", leaf, approval, proof, NOW)), want);
    });
  }
});

Deno.test("QuorumLedger: a leaf runs at most once, across a restart, but its own command may re-check", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pki = await makeTestPki({ approvers: 2 });
    const batch = await buildBatch("b", LEAVES, NOW + 60_000);
    const approval = encodeBatchApproval(
      batch.scopeBytes,
      await Promise.all(pki.approvers.map((a) => approveScope(a, batch.scopeBytes))),
    );
    const adm = await verifyBatch(pki.bundle, "b", LEAVES[2]!, approval, await batch.proof(2), NOW);
    const ledger = await QuorumLedger.open(dir);
    await ledger.record(ledger.checkLeaf("cmd-1", adm), NOW);
    const reopened = await QuorumLedger.open(dir);
    assert.throws(
      () => reopened.checkLeaf("cmd-2", adm),
      (e) => e instanceof QuorumError && e.reason === "BATCH_UNAPPROVED",
    );
    assert.equal(reopened.checkLeaf("cmd-1", adm).type, "leaf");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("QuorumLedger: the unbatched limit counts a rolling hour of the host clock and survives a restart", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let host = 1_000_000_000;
    const clock = () => host;
    const ledger = await QuorumLedger.open(dir, clock);
    assert.throws(
      () => ledger.checkUnbatched("c0", 0),
      (e) => e instanceof QuorumError && e.reason === "UNBATCHED_LIMIT",
    );
    await ledger.record(ledger.checkUnbatched("c1", 2), NOW);
    host += 10 * 60_000;
    await ledger.record(ledger.checkUnbatched("c2", 2), NOW);
    const restarted = await QuorumLedger.open(dir, clock);
    assert.equal(restarted.countLastHour(), 2);
    assert.throws(
      () => restarted.checkUnbatched("c3", 2),
      (e) => e instanceof QuorumError && e.reason === "UNBATCHED_LIMIT",
    );
    assert.equal(
      restarted.checkUnbatched("c1", 2).type,
      "unbatched",
      "a counted command re-checks without counting again",
    );
    host += 50 * 60_000 + 1;
    assert.equal(restarted.countLastHour(), 1, "c1 left the rolling hour");
    await restarted.record(restarted.checkUnbatched("c3", 2), NOW);
    assert.equal((await QuorumLedger.open(dir, clock)).countLastHour(), 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
