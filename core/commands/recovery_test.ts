import assert from "node:assert/strict";
import { Journal } from "../journal/mod.ts";
import { approveScope, buildBatch, encodeBatchApproval } from "../pki/quorum.ts";
import { QuorumLedger } from "../pki/quorum_ledger.ts";
import { NODE, NOW, openBench, until } from "./harness_testing.ts";
import { Dispatcher } from "./dispatcher.ts";
import { FakeHandler } from "./fake_handlers.ts";
import { HandlerRegistry } from "./handlers.ts";
import type { CommandUpdate } from "./results.ts";
import type { TrustBundle } from "../pki/trust_bundle.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

/** A second process on the same data dir: a new incarnation of the journal and a fresh dispatcher. */
async function restart(dir: string, bundle: TrustBundle, serverNow: number, unbatched = 0) {
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  const ledger = await QuorumLedger.open(dir, () => NOW);
  const handlers = {
    inv: new FakeHandler("inventory.refresh"),
    reset: new FakeHandler("gpu.reset"),
    logs: new FakeHandler("logs.collect"),
  };
  const registry = new HandlerRegistry().register(handlers.inv).register(handlers.reset).register(handlers.logs);
  const updates: CommandUpdate[] = [];
  const d = new Dispatcher({
    journal,
    bootId: "boot-1",
    sink: { send: (u) => void updates.push(u) },
    specs: { requestSpec: () => {} },
    acceptance: {
      nodeId: NODE,
      role: "node",
      handlers: registry,
      upgradeOnly: () => false,
      appliedGeneration: () => 5,
      serverNow: () => serverNow,
      trustBundle: () => bundle,
      ledger,
      unbatchedPerHour: () => unbatched,
    },
  });
  return {
    journal,
    d,
    handlers,
    updates,
    async close() {
      await d.stop();
      await journal.close();
    },
  };
}

Deno.test("a retry-safe command an earlier process accepted runs its acceptance checks again on redelivery", async (t) => {
  for (
    const [name, serverNow, want] of [["still valid: it re-executes", NOW, "SUCCEEDED"], [
      "now expired: EXPIRED",
      NOW + 120_000,
      "REJECTED",
    ]] as const
  ) {
    await t.step(name, async () => {
      await using b = await openBench();
      const cmd = await b.command({ kind: "inventory.refresh" });
      await b.journal.accept(cmd.body.id, { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
      await b.dispatcher.stop();
      await b.journal.close();
      const p2 = await restart(b.dir, b.pki.bundle, serverNow);
      try {
        await p2.d.deliver(cmd);
        await p2.d.settled();
        assert.equal(p2.updates.at(-1)?.state, want);
        assert.equal(p2.handlers.inv.runs.length, want === "SUCCEEDED" ? 1 : 0);
      } finally {
        await p2.close();
        b.journal = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
      }
    });
  }
});

Deno.test("a non-retry-safe command an earlier process left is FAILED interrupted, never run again", async () => {
  await using b = await openBench();
  b.state.unbatchedPerHour = 1;
  const cmd = await b.command({
    kind: "gpu.reset",
    payload: { typeUrl: "t", value: new TextEncoder().encode("GPU-1") },
  });
  await b.journal.accept(cmd.body.id, { kind: "gpu.reset", retrySafe: false, selfTerminating: false });
  await b.dispatcher.stop();
  await b.journal.close();
  const p2 = await restart(b.dir, b.pki.bundle, NOW, 1);
  try {
    await p2.d.deliver(cmd);
    assert.deepEqual(p2.updates.map((u) => `${u.state}:${u.errorCode}`), ["FAILED:interrupted"]);
    assert.deepEqual(p2.handlers.reset.runs, []);
  } finally {
    await p2.close();
    b.journal = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  }
});

Deno.test("a duplicate delivery while the command is in flight re-attaches: it runs once", async () => {
  await using b = await openBench({ gated: true });
  const cmd = await b.command({ kind: "inventory.refresh" });
  await Promise.all([b.dispatcher.deliver(cmd), b.dispatcher.deliver(cmd)]);
  await b.dispatcher.deliver(cmd);
  b.handlers["inventory.refresh"]!.releaseAll();
  await b.dispatcher.settled();
  assert.deepEqual(b.handlers["inventory.refresh"]!.runs, [cmd.body.id]);
  assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
});

Deno.test("quorum through the dispatcher: a batch leaf runs once, even across a restart; its own redelivery is not refused", async () => {
  await using b = await openBench();
  const batch = await buildBatch("b-1", [{ subject: NODE, kind: "gpu.reset" }], NOW + 3_600_000);
  const approval = encodeBatchApproval(
    batch.scopeBytes,
    await Promise.all(b.pki.approvers.map((a) => approveScope(a, batch.scopeBytes))),
  );
  const quorum = { batchApproval: approval, batchProof: await batch.proof(0) };
  const gpu = { typeUrl: "t", value: new TextEncoder().encode("GPU-1") };
  const first = { ...await b.command({ kind: "gpu.reset", batchId: "b-1", payload: gpu }), ...quorum };
  const second = { ...await b.command({ kind: "gpu.reset", batchId: "b-1", payload: gpu }), ...quorum };
  await b.dispatcher.deliver(first);
  await b.dispatcher.settled();
  assert.deepEqual(b.trail(first.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
  await b.dispatcher.deliver(second);
  assert.deepEqual(b.trail(second.body.id), ["REJECTED:BATCH_UNAPPROVED"]);
  await b.dispatcher.stop();
  await b.journal.close();
  const p2 = await restart(b.dir, b.pki.bundle, NOW);
  try {
    const third = { ...await b.command({ kind: "gpu.reset", batchId: "b-1", payload: gpu }), ...quorum };
    await p2.d.deliver(third);
    await p2.d.deliver(first);
    assert.deepEqual(
      p2.updates.map((u) => `${u.commandId === first.body.id ? "first" : "third"}:${u.state}:${u.reason ?? ""}`),
      [
        "third:REJECTED:BATCH_UNAPPROVED",
        "first:SUCCEEDED:",
      ],
    );
  } finally {
    await p2.close();
    b.journal = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  }
});

Deno.test("the unbatched hourly limit holds across a restart of the daemon", async () => {
  await using b = await openBench();
  b.state.unbatchedPerHour = 1;
  const r1 = await b.command({ kind: "node.reboot" });
  await b.dispatcher.deliver(r1);
  assert.equal(b.trail(r1.body.id)[0], "ACKED");
  await b.dispatcher.stop();
  await b.journal.close();
  const p2 = await restart(b.dir, b.pki.bundle, NOW, 1);
  try {
    const r2 = await b.command({ kind: "gpu.reset", payload: { typeUrl: "t", value: new Uint8Array([1]) } });
    await p2.d.deliver(r2);
    assert.deepEqual(p2.updates.map((u) => `${u.state}:${u.reason}`), ["REJECTED:UNBATCHED_LIMIT"]);
  } finally {
    await p2.close();
    b.journal = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  }
});

Deno.test("a graceful stop leaves queued commands accepted (not CANCELLED); the next process follows the recovery table", async () => {
  await using b = await openBench({ gated: true });
  b.state.unbatchedPerHour = 5;
  const gpu = { typeUrl: "t", value: new TextEncoder().encode("GPU-1") };
  const dcgm = await b.command({ kind: "diag.dcgm", payload: gpu });
  const reset = await b.command({ kind: "gpu.reset", payload: gpu }); // not retry-safe, waits for GPU-1
  const first = await b.command({ kind: "logs.collect" });
  const queued = await b.command({ kind: "logs.collect" }); // retry-safe, waits for the bulk lane's one worker
  for (const c of [dcgm, reset, first, queued]) await b.dispatcher.deliver(c);
  await until(
    () => b.handlers["diag.dcgm"]!.waiting(dcgm.body.id) && b.handlers["logs.collect"]!.waiting(first.body.id),
    "dcgm and the first upload to start",
  );
  const stopping = b.dispatcher.stop(); // SIGTERM: running commands finish, queued ones stay
  b.handlers["diag.dcgm"]!.open(dcgm.body.id);
  b.handlers["logs.collect"]!.open(first.body.id);
  await stopping;
  assert.deepEqual(b.trail(reset.body.id), ["ACKED"]);
  assert.deepEqual(b.trail(queued.body.id), ["ACKED"]);
  assert.equal((await b.journal.get(reset.body.id))?.state, "accepted");
  assert.equal((await b.journal.get(queued.body.id))?.state, "accepted");
  assert.deepEqual(b.trail(first.body.id), ["ACKED", "RUNNING", "SUCCEEDED"], "a running command reports its outcome");
  await b.journal.close();
  const p2 = await restart(b.dir, b.pki.bundle, NOW, 5);
  try {
    const rec = await p2.journal.recover();
    assert.deepEqual(rec.settled.map((e) => [e.id, e.result.state, e.result.code]), [
      [reset.body.id, "FAILED", "interrupted"],
    ]);
    assert.deepEqual(rec.waiting.map((e) => e.id), [queued.body.id], "the retry-safe one waits for redelivery");
    await p2.d.deliver(queued);
    await p2.d.settled();
    assert.deepEqual(p2.handlers.logs.runs, [queued.body.id]);
    assert.deepEqual(p2.updates.map((u) => `${u.commandId === queued.body.id ? "queued" : "?"}:${u.state}`), [
      "queued:ACKED",
      "queued:RUNNING",
      "queued:SUCCEEDED",
    ]);
  } finally {
    await p2.close();
    b.journal = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  }
});
