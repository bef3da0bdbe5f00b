import assert from "node:assert/strict";
import { approveScope, buildBatch, encodeBatchApproval } from "../pki/quorum.ts";
import { type Bench, NODE, NOW, openBench } from "./harness_testing.ts";
import type { IncomingCommand } from "./command.ts";
import { JournalBusy } from "../journal/mod.ts";
import { Ed25519Thread, VerifierThreadError } from "../pki/ed25519_thread.ts";

/** Corrupts the signature (one body byte flipped after signing). */
function badlySigned(c: IncomingCommand): IncomingCommand {
  const bytes = c.bodyBytes.slice();
  bytes[bytes.length - 2]! ^= 1;
  return { ...c, bodyBytes: bytes };
}

function noCredit(b: Bench, lane: "control" | "provision" | "bulk" = "control"): void {
  while (b.dispatcher.lanes[lane].reserveCredit());
}

async function approvedBatch(b: Bench, subject = NODE, kind = "gpu.reset", approvers = 2) {
  const batch = await buildBatch("batch-7", [{ subject, kind }, { subject: "node-2", kind }], NOW + 3_600_000);
  const sigs = await Promise.all(b.pki.approvers.slice(0, approvers).map((a) => approveScope(a, batch.scopeBytes)));
  return { batchApproval: encodeBatchApproval(batch.scopeBytes, sigs), batchProof: await batch.proof(0) };
}

interface Row {
  name: string;
  make: (b: Bench) => Promise<IncomingCommand>;
  setup?: (b: Bench) => void;
  /** The updates for the command, in order. */
  want: string[];
  /** Whether the journal holds a done entry afterwards (terminal rejections are journaled, BUSY never). */
  journaled: boolean;
}

const ROWS: Row[] = [
  // One row per check.
  {
    name: "a valid command is ACKED",
    make: (b) => b.command({ kind: "inventory.refresh" }),
    want: ["ACKED"],
    journaled: false,
  },
  {
    name: "UNSUPPORTED: another node's body",
    make: (b) => b.command({ kind: "inventory.refresh", nodeId: "node-2" }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "UNSUPPORTED: an unknown kind",
    make: (b) => b.command({ kind: "no.such" }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "UNSUPPORTED: a kind outside the role",
    make: (b) => b.command({ kind: "bmc.query" }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "UNSUPPORTED: a kind of the role this build does not implement",
    make: (b) => b.command({ kind: "diag.nvml" }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "UNSUPPORTED: anything but daemon.upgrade while upgrade-only",
    setup: (b) => b.state.upgradeOnly = true,
    make: (b) => b.command({ kind: "inventory.refresh" }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "min_generation ahead: deferred, nothing journaled",
    make: (b) => b.command({ kind: "inventory.refresh", minGeneration: 6 }),
    want: [],
    journaled: false,
  },
  {
    name: "min_generation met: ACKED",
    make: (b) => b.command({ kind: "inventory.refresh", minGeneration: 5 }),
    want: ["ACKED"],
    journaled: false,
  },
  {
    name: "STALE_GENERATION: behind at not_after",
    make: (b) => b.command({ kind: "inventory.refresh", minGeneration: 6, notAfterMs: NOW - 1 }),
    want: ["REJECTED:STALE_GENERATION"],
    journaled: true,
  },
  {
    name: "EXPIRED: past not_after",
    make: (b) => b.command({ kind: "inventory.refresh", notAfterMs: NOW - 1 }),
    want: ["REJECTED:EXPIRED"],
    journaled: true,
  },
  {
    name: "EXPIRED: no not_after",
    make: (b) => b.command({ kind: "inventory.refresh", notAfterMs: undefined }),
    want: ["REJECTED:EXPIRED"],
    journaled: true,
  },
  {
    name: "not EXPIRED: exactly at not_after",
    make: (b) => b.command({ kind: "inventory.refresh", notAfterMs: NOW }),
    want: ["ACKED"],
    journaled: false,
  },
  {
    name: "BAD_SIGNATURE: invalid",
    make: async (b) => badlySigned(await b.command({ kind: "inventory.refresh" })),
    want: ["REJECTED:BAD_SIGNATURE"],
    journaled: true,
  },
  {
    name: "BAD_SIGNATURE: missing",
    make: (b) => b.command({ kind: "inventory.refresh" }, { sign: false }),
    want: ["REJECTED:BAD_SIGNATURE"],
    journaled: true,
  },
  {
    name: "BAD_SIGNATURE: unknown key",
    make: async (b) => ({ ...await b.command({ kind: "inventory.refresh" }), signature: new Uint8Array(80) }),
    want: ["REJECTED:BAD_SIGNATURE"],
    journaled: true,
  },
  {
    name: "BAD_SIGNATURE: whatever the body's flags say (a non-destructive, non-attested kind)",
    make: (b) => b.command({ kind: "logs.collect", attested: false, retrySafe: true }, { sign: false }),
    want: ["REJECTED:BAD_SIGNATURE"],
    journaled: true,
  },
  {
    name: "BATCH_UNAPPROVED: too few approvers",
    make: async (b) => ({
      ...await b.command({ kind: "gpu.reset", batchId: "batch-7" }),
      ...await approvedBatch(b, NODE, "gpu.reset", 1),
    }),
    want: ["REJECTED:BATCH_UNAPPROVED"],
    journaled: true,
  },
  {
    name: "BATCH_UNAPPROVED: a proof for another node's leaf",
    make: async (b) => ({
      ...await b.command({ kind: "gpu.reset", batchId: "batch-7" }),
      ...await approvedBatch(b, "node-9"),
    }),
    want: ["REJECTED:BATCH_UNAPPROVED"],
    journaled: true,
  },
  {
    name: "an approved batch leaf is ACKED",
    make: async (b) => ({ ...await b.command({ kind: "gpu.reset", batchId: "batch-7" }), ...await approvedBatch(b) }),
    want: ["ACKED"],
    journaled: false,
  },
  {
    name: "UNBATCHED_LIMIT: an unbatched destructive command at the default limit 0",
    make: (b) => b.command({ kind: "node.reboot" }),
    want: ["REJECTED:UNBATCHED_LIMIT"],
    journaled: true,
  },
  {
    name: "an unbatched destructive command within the hourly allowance is ACKED",
    setup: (b) => b.state.unbatchedPerHour = 1,
    make: (b) => b.command({ kind: "node.reboot" }),
    want: ["ACKED"],
    journaled: false,
  },
  {
    name: "BUSY: no credit on the lane (never journaled)",
    setup: (b) => noCredit(b),
    make: (b) => b.command({ kind: "inventory.refresh" }),
    want: ["REJECTED:BUSY"],
    journaled: false,
  },
  {
    name: "a full lane does not refuse another lane",
    setup: (b) => noCredit(b, "control"),
    make: (b) => b.command({ kind: "logs.collect" }),
    want: ["ACKED"],
    journaled: false,
  },
  // Pairs that test the order.
  {
    name: "order: another node AND expired → UNSUPPORTED",
    make: (b) => b.command({ kind: "inventory.refresh", nodeId: "x", notAfterMs: NOW - 1 }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "order: unknown kind AND badly signed → UNSUPPORTED",
    make: async (b) => badlySigned(await b.command({ kind: "no.such" })),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "order: upgrade-only AND expired → UNSUPPORTED",
    setup: (b) => b.state.upgradeOnly = true,
    make: (b) => b.command({ kind: "inventory.refresh", notAfterMs: NOW - 1 }),
    want: ["REJECTED:UNSUPPORTED"],
    journaled: true,
  },
  {
    name: "order: behind AND badly signed → deferred, not BAD_SIGNATURE",
    make: async (b) => badlySigned(await b.command({ kind: "inventory.refresh", minGeneration: 9 })),
    want: [],
    journaled: false,
  },
  {
    name: "order: behind AND past not_after → STALE_GENERATION, not EXPIRED",
    make: (b) => b.command({ kind: "inventory.refresh", minGeneration: 9, notAfterMs: NOW - 1 }),
    want: ["REJECTED:STALE_GENERATION"],
    journaled: true,
  },
  {
    name: "order: expired AND badly signed → EXPIRED",
    make: async (b) => badlySigned(await b.command({ kind: "inventory.refresh", notAfterMs: NOW - 1 })),
    want: ["REJECTED:EXPIRED"],
    journaled: true,
  },
  {
    name: "order: expired AND unbatched destructive over the limit → EXPIRED",
    make: (b) => b.command({ kind: "node.reboot", notAfterMs: NOW - 1 }),
    want: ["REJECTED:EXPIRED"],
    journaled: true,
  },
  {
    name: "order: badly signed AND unapproved batch → BAD_SIGNATURE",
    make: async (b) =>
      badlySigned({
        ...await b.command({ kind: "gpu.reset", batchId: "batch-7" }),
        ...await approvedBatch(b, NODE, "gpu.reset", 1),
      }),
    want: ["REJECTED:BAD_SIGNATURE"],
    journaled: true,
  },
  {
    name: "order: badly signed AND no credit → BAD_SIGNATURE",
    setup: (b) => noCredit(b),
    make: async (b) => badlySigned(await b.command({ kind: "inventory.refresh" })),
    want: ["REJECTED:BAD_SIGNATURE"],
    journaled: true,
  },
  {
    name: "order: expired AND no credit → EXPIRED",
    setup: (b) => noCredit(b),
    make: (b) => b.command({ kind: "inventory.refresh", notAfterMs: NOW - 1 }),
    want: ["REJECTED:EXPIRED"],
    journaled: true,
  },
  {
    name: "order: unapproved batch AND no credit → BATCH_UNAPPROVED",
    setup: (b) => noCredit(b),
    make: async (b) => ({
      ...await b.command({ kind: "gpu.reset", batchId: "batch-7" }),
      ...await approvedBatch(b, NODE, "gpu.reset", 1),
    }),
    want: ["REJECTED:BATCH_UNAPPROVED"],
    journaled: true,
  },
  {
    name: "order: over the unbatched limit AND no credit → UNBATCHED_LIMIT",
    setup: (b) => noCredit(b),
    make: (b) => b.command({ kind: "node.reboot" }),
    want: ["REJECTED:UNBATCHED_LIMIT"],
    journaled: true,
  },
];

Deno.test("acceptance checks, one row per check and per ordering pair", async (t) => {
  for (const row of ROWS) {
    await t.step(row.name, async () => {
      await using b = await openBench({ gated: true });
      row.setup?.(b);
      const cmd = await row.make(b);
      await b.dispatcher.deliver(cmd);
      // The verdict is the first update; an admitted command may already be RUNNING.
      assert.deepEqual(b.trail(cmd.body.id).slice(0, 1), row.want);
      const entry = await b.journal.get(cmd.body.id);
      assert.equal(entry?.state === "done", row.journaled, `journaled: ${JSON.stringify(entry)}`);
      if (row.want[0]?.startsWith("REJECTED:") && row.journaled) {
        assert.equal(entry?.state === "done" && entry.result.code, row.want[0].slice("REJECTED:".length));
      }
      if (row.want.length === 0) assert.equal(b.dispatcher.phaseOf(cmd.body.id), "deferred");
    });
  }
});

Deno.test("without command-signing roots nothing is enforced (v0.1): unsigned commands are ACKED", async () => {
  await using b = await openBench({ signing: false });
  const cmd = await b.command({ kind: "inventory.refresh" }, { sign: false });
  await b.dispatcher.deliver(cmd);
  assert.deepEqual(b.trail(cmd.body.id).slice(0, 1), ["ACKED"]);
  await b.dispatcher.settled();
});

Deno.test("a terminal rejection is journaled: a duplicate delivery gets the same answer without re-checking", async () => {
  await using b = await openBench();
  const cmd = await b.command({ kind: "inventory.refresh", notAfterMs: NOW - 1 });
  await b.dispatcher.deliver(cmd);
  b.state.serverNow = NOW - 10_000; // it would pass now; the journal's answer stands
  await b.dispatcher.deliver(cmd);
  assert.deepEqual(b.trail(cmd.body.id), ["REJECTED:EXPIRED", "REJECTED:EXPIRED"]);
});

Deno.test("BUSY when the journal is full, never journaled, and the credit comes back", async () => {
  await using b = await openBench({
    wrapJournal: (j) =>
      new Proxy(j, {
        get(target, p) {
          if (p === "accept") return () => Promise.reject(new JournalBusy("journal full (test)"));
          const v = Reflect.get(target, p);
          return typeof v === "function" ? v.bind(target) : v;
        },
      }),
  });
  const cmd = await b.command({ kind: "inventory.refresh" });
  await b.dispatcher.deliver(cmd);
  await b.dispatcher.settled();
  assert.deepEqual(b.trail(cmd.body.id), ["REJECTED:BUSY"]);
  assert.equal(await b.journal.get(cmd.body.id), null);
  assert.equal(b.dispatcher.lanes.control.freeCredits, 8);
});

Deno.test("a signature verifier that cannot decide (its thread failed) fails the delivery closed: not ACKED, not BAD_SIGNATURE, nothing journaled; delivered again, the command is checked again", async () => {
  let crashed = true;
  // A real Ed25519 thread whose thread dies on its first batch, then a working one.
  const thread = new Ed25519Thread(async (shared) => {
    if (!crashed) return await (await import("../pki/ed25519_thread.ts")).spawnVerifierThread(shared);
    crashed = false;
    const { Worker } = await import("node:worker_threads");
    return new Worker(`process.exit(3);`, { eval: true, workerData: shared });
  });
  try {
    await using b = await openBench({ verifyEd25519: (k, s, m) => thread.verify(k, s, m) });
    const cmd = await b.command({ kind: "inventory.refresh" });
    await assert.rejects(b.dispatcher.deliver(cmd), VerifierThreadError);
    assert.deepEqual(b.trail(cmd.body.id), []);
    assert.equal(await b.journal.get(cmd.body.id), null);
    await b.dispatcher.deliver(cmd);
    assert.deepEqual(b.trail(cmd.body.id).slice(0, 1), ["ACKED"]);
    // A bad signature through the same (working) thread is still BAD_SIGNATURE.
    const bad = await b.command({ kind: "inventory.refresh" });
    const bytes = bad.bodyBytes.slice();
    bytes[bytes.length - 2]! ^= 1;
    await b.dispatcher.deliver({ ...bad, bodyBytes: bytes });
    assert.deepEqual(b.trail(bad.body.id), ["REJECTED:BAD_SIGNATURE"]);
    await b.dispatcher.settled();
  } finally {
    await thread.close();
  }
});

Deno.test("the terminal reasons are exactly the ones the journal stores", async () => {
  const { REJECT_REASONS } = await import("../journal/mod.ts");
  const { TERMINAL_REJECT_REASONS } = await import("./rejection.ts");
  assert.deepEqual([...TERMINAL_REJECT_REASONS].sort(), [...REJECT_REASONS].sort());
  assert.ok(!(TERMINAL_REJECT_REASONS as readonly string[]).includes("BUSY"));
});
