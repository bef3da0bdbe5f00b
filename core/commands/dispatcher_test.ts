import assert from "node:assert/strict";
import { Journal } from "../journal/mod.ts";
import { verifyCommandResult } from "../pki/attest.ts";
import { generateSigningKeyPair } from "../pki/ed25519.ts";
import { NOW, openBench, plainDispatcher, until } from "./harness_testing.ts";
import { HandlerRegistry } from "./handlers.ts";
import { FakeHandler } from "./fake_handlers.ts";
import { CommandFailed, InvalidPayload, LeftForRecovery } from "./rejection.ts";
import type { CommandUpdate } from "./results.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

const tick = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0));
};

Deno.test("a command goes ACKED → RUNNING → SUCCEEDED, each with the boot id, and holds its credit until journaled", async () => {
  await using b = await openBench({ gated: true });
  const cmd = await b.command({ kind: "inventory.refresh" });
  await b.dispatcher.deliver(cmd);
  assert.deepEqual(b.trail(cmd.body.id).slice(0, 1), ["ACKED"], "deliver resolves once accepted is durable");
  assert.ok(["accepted", "running"].includes((await b.journal.get(cmd.body.id))?.state ?? ""));
  await until(() => b.handlers["inventory.refresh"]!.waiting(cmd.body.id), "the handler to start");
  assert.equal((await b.journal.get(cmd.body.id))?.state, "accepted", "running{boot_id} is for self-terminating kinds");
  assert.equal(b.dispatcher.lanes.control.freeCredits, 7);
  b.handlers["inventory.refresh"]!.open(cmd.body.id);
  await b.dispatcher.settled();
  assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
  assert.ok(b.updates.every((u) => u.bootId === "boot-1"));
  assert.equal(b.dispatcher.lanes.control.freeCredits, 8);
  const e = await b.journal.get(cmd.body.id);
  assert.equal(e?.state === "done" && e.result.state, "SUCCEEDED");
});

Deno.test("handler failures become FAILED with invalid-payload, a kind-specific code, or internal", async (t) => {
  const rows: [string, () => never, string][] = [
    ["invalid payload", () => {
      throw new InvalidPayload("upload_url is not https");
    }, "FAILED:invalid-payload"],
    ["a kind-specific failure", () => {
      throw new CommandFailed("upload-failed", "HTTP 403");
    }, "FAILED:upload-failed"],
    ["anything else", () => {
      throw new TypeError("boom");
    }, "FAILED:internal"],
  ];
  for (const [name, fail, want] of rows) {
    await t.step(name, async () => {
      const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
      const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW) });
      const updates: CommandUpdate[] = [];
      const registry = new HandlerRegistry().register(
        new FakeHandler("inventory.refresh", { result: () => Promise.resolve(fail()) }),
      );
      const d = plainDispatcher({ journal, registry, updates, nodeId: "n" });
      const body = { id: "01X", nodeId: "n", kind: "inventory.refresh", notAfterMs: NOW + 1 } as const;
      await d.deliver({
        bodyBytes: new Uint8Array([1]),
        attempt: 1,
        body: {
          ...body,
          seq: 1,
          lane: "control",
          minGeneration: 0,
          retrySafe: true,
          idempotencyKey: "",
          selfTerminating: false,
          attested: false,
          workflowId: "",
          stepId: "",
          traceparent: "",
          batchId: "",
        },
      });
      await d.settled();
      const last = updates.at(-1)!;
      assert.equal(`${last.state}:${last.errorCode}`, want);
      await d.stop();
      await journal.close();
      await Deno.remove(dir, { recursive: true });
    });
  }
});

Deno.test("an invalid payload found when computing locks is ACKED, then FAILED invalid-payload, and never runs", async () => {
  await using b = await openBench();
  const h = new FakeHandler("inventory.refresh");
  (h as { resources: unknown }).resources = () => {
    throw new InvalidPayload("bad");
  };
  const registry = new HandlerRegistry().register(h);
  const d = plainDispatcher({ journal: b.journal, registry, updates: b.updates, applied: 5, bundle: b.pki.bundle });
  const cmd = await b.command({ kind: "inventory.refresh" });
  await d.deliver(cmd);
  await d.settled();
  assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "FAILED:invalid-payload"]);
  assert.deepEqual(h.runs, []);
  await d.stop();
});

Deno.test("cancel in each phase", async (t) => {
  await t.step("deferred: CANCELLED and journaled; a redelivery resends CANCELLED", async () => {
    await using b = await openBench();
    const cmd = await b.command({ kind: "inventory.refresh", minGeneration: 9 });
    await b.dispatcher.deliver(cmd);
    assert.equal(b.dispatcher.phaseOf(cmd.body.id), "deferred");
    await b.dispatcher.cancel(cmd.body.id, "operator");
    await b.dispatcher.cancel(cmd.body.id, "operator");
    assert.equal(b.dispatcher.phaseOf(cmd.body.id), undefined);
    await b.dispatcher.deliver(cmd);
    assert.deepEqual(b.trail(cmd.body.id), ["CANCELLED", "CANCELLED", "CANCELLED"]);
    b.timers.fireAll();
    await tick();
    assert.deepEqual(b.handlers["inventory.refresh"]!.runs, []);
  });
  await t.step("queued behind a busy lane: CANCELLED, never runs, credit returned", async () => {
    await using b = await openBench({ gated: true });
    const first = await b.command({ kind: "logs.collect" });
    const second = await b.command({ kind: "logs.collect" });
    await b.dispatcher.deliver(first);
    await b.dispatcher.deliver(second);
    await until(() => b.handlers["logs.collect"]!.waiting(first.body.id), "the first upload to start");
    await b.dispatcher.cancel(second.body.id, "not needed");
    await until(() => b.trail(second.body.id).includes("CANCELLED"), "the cancel to settle");
    b.handlers["logs.collect"]!.open(first.body.id);
    await b.dispatcher.settled();
    assert.deepEqual(b.trail(second.body.id), ["ACKED", "CANCELLED"]);
    assert.deepEqual(b.trail(first.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
    assert.deepEqual(b.handlers["logs.collect"]!.runs, [first.body.id]);
    assert.equal(b.dispatcher.lanes.bulk.freeCredits, 2);
  });
  await t.step("waiting for a lock held by another lane: CANCELLED", async () => {
    await using b = await openBench({ gated: true });
    const dcgm = await b.command({
      kind: "diag.dcgm",
      payload: { typeUrl: "t", value: new TextEncoder().encode("GPU-1") },
    });
    b.state.unbatchedPerHour = 5;
    const reset = await b.command({
      kind: "gpu.reset",
      payload: { typeUrl: "t", value: new TextEncoder().encode("GPU-1") },
    });
    await b.dispatcher.deliver(dcgm);
    await until(() => b.handlers["diag.dcgm"]!.waiting(dcgm.body.id), "dcgm to start");
    await b.dispatcher.deliver(reset);
    await tick();
    await b.dispatcher.cancel(reset.body.id);
    await until(() => b.trail(reset.body.id).includes("CANCELLED"), "the cancel");
    b.handlers["diag.dcgm"]!.open(dcgm.body.id);
    await b.dispatcher.settled();
    assert.deepEqual(b.handlers["gpu.reset"]!.runs, []);
  });
  await t.step("running: the handler is told to stop and its real outcome wins over the cancel", async () => {
    await using b = await openBench({ gated: true });
    const cmd = await b.command({ kind: "inventory.refresh" });
    await b.dispatcher.deliver(cmd);
    await until(() => b.handlers["inventory.refresh"]!.waiting(cmd.body.id), "the handler to start");
    await b.dispatcher.cancel(cmd.body.id, "late");
    await b.dispatcher.cancel(cmd.body.id, "late again");
    assert.deepEqual(b.handlers["inventory.refresh"]!.aborted, [cmd.body.id]);
    b.handlers["inventory.refresh"]!.open(cmd.body.id);
    await b.dispatcher.settled();
    assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
  });
  await t.step("done: a late cancel changes nothing and resends the unacked result", async () => {
    await using b = await openBench();
    const cmd = await b.command({ kind: "inventory.refresh" });
    await b.dispatcher.deliver(cmd);
    await b.dispatcher.settled();
    await b.dispatcher.cancel(cmd.body.id);
    assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "RUNNING", "SUCCEEDED", "SUCCEEDED"]);
    await b.dispatcher.onAck([cmd.body.id]);
    await b.dispatcher.cancel(cmd.body.id);
    assert.equal(b.trail(cmd.body.id).length, 4, "an acked result is not resent");
    const e = await b.journal.get(cmd.body.id);
    assert.equal(e?.state === "done" && e.result.state, "SUCCEEDED");
  });
});

Deno.test("locks under contention: a control-lane gpu.reset waits for the provision-lane diag.dcgm on the same GPU", async () => {
  await using b = await openBench({ gated: true });
  b.state.unbatchedPerHour = 5;
  const gpu = (s: string) => ({ typeUrl: "t", value: new TextEncoder().encode(s) });
  const dcgm = await b.command({ kind: "diag.dcgm", payload: gpu("GPU-1") });
  const reset1 = await b.command({ kind: "gpu.reset", payload: gpu("GPU-1") });
  const reset2 = await b.command({ kind: "gpu.reset", payload: gpu("GPU-2") });
  await b.dispatcher.deliver(dcgm);
  await until(() => b.handlers["diag.dcgm"]!.waiting(dcgm.body.id), "dcgm to start");
  await b.dispatcher.deliver(reset1);
  await b.dispatcher.deliver(reset2);
  await tick(20);
  assert.deepEqual(b.handlers["gpu.reset"]!.runs, [], "reset1 waits for GPU-1; reset2 waits behind it in its lane");
  b.handlers["diag.dcgm"]!.open(dcgm.body.id);
  await until(() => b.handlers["gpu.reset"]!.runs.length === 2, "both resets to start");
  assert.deepEqual(b.handlers["gpu.reset"]!.runs, [reset1.body.id, reset2.body.id]);
  b.handlers["gpu.reset"]!.releaseAll();
  await b.dispatcher.settled();
});

Deno.test("credits: the ninth control command is BUSY while eight are admitted; order within the lane is kept", async () => {
  await using b = await openBench({ gated: true });
  const cmds = [];
  for (let i = 0; i < 9; i++) cmds.push(await b.command({ kind: "inventory.refresh", seq: i }));
  await Promise.all(cmds.map((c) => b.dispatcher.deliver(c)));
  assert.deepEqual(b.trail(cmds[8]!.body.id), ["REJECTED:BUSY"]);
  await until(() => b.handlers["inventory.refresh"]!.runs.length === 4, "four workers to start");
  assert.deepEqual(b.handlers["inventory.refresh"]!.runs, cmds.slice(0, 4).map((c) => c.body.id));
  b.handlers["inventory.refresh"]!.releaseAll();
  await b.dispatcher.settled();
  assert.deepEqual(b.handlers["inventory.refresh"]!.runs, cmds.slice(0, 8).map((c) => c.body.id));
});

Deno.test("min_generation: deferred with a SpecRequest, run once the spec arrives", async () => {
  await using b = await openBench();
  const cmd = await b.command({ kind: "inventory.refresh", minGeneration: 7 });
  await b.dispatcher.deliver(cmd);
  assert.equal(b.specRequests.length, 1);
  assert.match(b.specRequests[0]!, /^MIN_GENERATION have=5 /);
  b.state.applied = 6;
  await b.dispatcher.onSpecApplied();
  assert.equal(b.dispatcher.phaseOf(cmd.body.id), "deferred");
  b.state.applied = 7;
  await b.dispatcher.onSpecApplied();
  await b.dispatcher.settled();
  assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
});

Deno.test("min_generation: still behind at not_after, the command is STALE_GENERATION", async () => {
  await using b = await openBench();
  const cmd = await b.command({ kind: "inventory.refresh", minGeneration: 7, notAfterMs: NOW + 1000 });
  await b.dispatcher.deliver(cmd);
  assert.equal(b.timers.pending.length, 1);
  assert.equal(b.timers.pending[0]!.ms, 1001);
  b.state.serverNow = NOW + 1001;
  b.timers.fireAll();
  await until(() => b.trail(cmd.body.id).length > 0, "the deadline");
  assert.deepEqual(b.trail(cmd.body.id), ["REJECTED:STALE_GENERATION"]);
  assert.equal(b.dispatcher.phaseOf(cmd.body.id), undefined);
});

Deno.test("a replay after a restart is refused by the journal: the stored result is resent, nothing runs again", async () => {
  await using b = await openBench();
  const cmd = await b.command({ kind: "inventory.refresh" });
  await b.dispatcher.deliver(cmd);
  await b.dispatcher.settled();
  await b.dispatcher.stop();
  await b.journal.close();
  const journal2 = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  try {
    const updates: CommandUpdate[] = [];
    const registry = new HandlerRegistry().register(new FakeHandler("inventory.refresh"));
    const d2 = plainDispatcher({ journal: journal2, registry, updates, applied: 5, bundle: b.pki.bundle });
    await d2.deliver(cmd);
    await d2.settled();
    assert.deepEqual(updates.map((u) => u.state), ["SUCCEEDED"]);
    assert.deepEqual((registry.get("inventory.refresh") as FakeHandler).runs, []);
    assert.deepEqual((await d2.unackedResults()).map((u) => u.commandId), [cmd.body.id]);
    await d2.onAck([cmd.body.id]);
    assert.deepEqual(await d2.unackedResults(), []);
    await d2.stop();
  } finally {
    await journal2.close();
    // the bench's own dispose closes the first journal again: reopen so it has something to close
    b.journal = await Journal.open({ dataDir: b.dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  }
});

Deno.test("attested kinds carry node_sig over the command id, the state and the result's SHA-256", async () => {
  const node = await generateSigningKeyPair();
  await using b = await openBench();
  const registry = new HandlerRegistry().register(
    new FakeHandler("diag.dcgm", {
      result: { result: { typeUrl: "type.googleapis.com/bcd.v1.DiagDcgmResult", value: new Uint8Array([8, 1]) } },
    }),
  ).register(new FakeHandler("inventory.refresh"));
  const updates: CommandUpdate[] = [];
  const d = plainDispatcher({
    journal: b.journal,
    registry,
    updates,
    applied: 5,
    bundle: b.pki.bundle,
    nodeKey: node.privateKey,
  });
  const diag = await b.command({ kind: "diag.dcgm" });
  const inv = await b.command({ kind: "inventory.refresh" });
  await d.deliver(diag);
  await d.deliver(inv);
  await d.settled();
  const done = updates.find((u) => u.commandId === diag.body.id && u.state === "SUCCEEDED")!;
  assert.ok(done.nodeSig);
  assert.equal(
    await verifyCommandResult(node.publicKey, diag.body.id, "SUCCEEDED", done.result!.value, done.nodeSig),
    true,
  );
  const [replayed] = (await d.unackedResults()).filter((u) => u.commandId === diag.body.id);
  assert.deepEqual(replayed!.nodeSig, done.nodeSig, "a replay carries the same signature");
  assert.equal(updates.find((u) => u.commandId === inv.body.id && u.state === "SUCCEEDED")!.nodeSig, undefined);
  await d.stop();
});

Deno.test("a cancel that arrives while the command is still in acceptance is not lost", async (t) => {
  for (
    const [name, fields, want] of [
      ["it would be queued: CANCELLED, never runs", { kind: "inventory.refresh" }, ["ACKED", "CANCELLED"]],
      ["it would be deferred: CANCELLED", { kind: "inventory.refresh", minGeneration: 9 }, ["CANCELLED"]],
    ] as const
  ) {
    await t.step(name, async () => {
      let release!: () => void;
      const slow = new Promise<void>((r) => release = r);
      await using b = await openBench({
        wrapJournal: (j) =>
          new Proxy(j, {
            get(target, p) {
              const v = Reflect.get(target, p);
              if (p === "resolve") {
                return async (...a: unknown[]) => (await slow, (v as (...x: unknown[]) => unknown).apply(target, a));
              }
              return typeof v === "function" ? v.bind(target) : v;
            },
          }),
      });
      const cmd = await b.command({ ...fields });
      const delivered = b.dispatcher.deliver(cmd);
      await b.dispatcher.cancel(cmd.body.id, "changed my mind");
      release();
      await delivered;
      await until(() => b.trail(cmd.body.id).includes("CANCELLED"), "the cancel");
      await b.dispatcher.settled();
      assert.deepEqual(b.trail(cmd.body.id), want);
      assert.deepEqual(b.handlers["inventory.refresh"]!.runs, []);
      const e = await b.journal.get(cmd.body.id);
      assert.equal(e?.state === "done" && e.result.state, "CANCELLED");
    });
  }
});

Deno.test("not_after is checked again when the command starts: one that waited past it for its lock is EXPIRED, never run", async () => {
  await using b = await openBench({ gated: true });
  b.state.unbatchedPerHour = 5;
  const gpu = (s: string) => ({ typeUrl: "t", value: new TextEncoder().encode(s) });
  const dcgm = await b.command({ kind: "diag.dcgm", payload: gpu("GPU-1"), notAfterMs: NOW + 3_600_000 });
  const reset = await b.command({ kind: "gpu.reset", payload: gpu("GPU-1"), notAfterMs: NOW + 60_000 });
  await b.dispatcher.deliver(dcgm);
  await until(() => b.handlers["diag.dcgm"]!.waiting(dcgm.body.id), "dcgm to start");
  await b.dispatcher.deliver(reset);
  assert.deepEqual(b.trail(reset.body.id), ["ACKED"], "accepted in time; it waits for GPU-1");
  b.state.serverNow = NOW + 3_600_000; // an hour later the lock frees
  b.handlers["diag.dcgm"]!.open(dcgm.body.id);
  await b.dispatcher.settled();
  assert.deepEqual(b.handlers["gpu.reset"]!.runs, [], "the late reset never runs");
  assert.deepEqual(b.trail(reset.body.id), ["ACKED", "REJECTED:EXPIRED"]);
  const e = await b.journal.get(reset.body.id);
  assert.ok(e?.state === "done");
  assert.deepEqual([e.result.state, e.result.code], ["REJECTED", "EXPIRED"]);
  assert.match(e.result.message ?? "", /past not_after/);
  assert.equal(b.dispatcher.lanes.control.freeCredits, 8, "its credit is returned");
});

Deno.test("not_after is checked again when a worker frees: a command queued behind a busy lane past it is EXPIRED", async () => {
  await using b = await openBench({ gated: true });
  const first = await b.command({ kind: "logs.collect", notAfterMs: NOW + 3_600_000 });
  const second = await b.command({ kind: "logs.collect", notAfterMs: NOW + 60_000 });
  await b.dispatcher.deliver(first);
  await b.dispatcher.deliver(second);
  await until(() => b.handlers["logs.collect"]!.waiting(first.body.id), "the first upload to start");
  b.state.serverNow = NOW + 60_001;
  b.handlers["logs.collect"]!.open(first.body.id);
  await b.dispatcher.settled();
  assert.deepEqual(b.handlers["logs.collect"]!.runs, [first.body.id]);
  assert.deepEqual(b.trail(second.body.id), ["ACKED", "REJECTED:EXPIRED"]);
});

Deno.test("a command whose accepted is still being made durable holds no lane worker: a later one runs meanwhile", async () => {
  const held: (() => void)[] = [];
  let holding = true;
  await using b = await openBench({
    gated: true,
    wrapJournal: (j) =>
      new Proxy(j, {
        get(target, p) {
          const v = Reflect.get(target, p);
          if (p === "accept") {
            return async (...a: unknown[]) => {
              if (holding) await new Promise<void>((r) => held.push(r)); // its group's fsync has not returned
              return (v as (...x: unknown[]) => unknown).apply(target, a);
            };
          }
          return typeof v === "function" ? v.bind(target) : v;
        },
      }),
  });
  // As many slow accepts as the control lane has workers (4), then one whose accept is prompt.
  const slow = await Promise.all([1, 2, 3, 4].map(() => b.command({ kind: "inventory.refresh" })));
  const slowDeliveries = slow.map((c) => b.dispatcher.deliver(c));
  await until(() => held.length === 4, "the four accepts to wait");
  holding = false;
  const fast = await b.command({ kind: "inventory.refresh" });
  await b.dispatcher.deliver(fast);
  await until(() => b.handlers["inventory.refresh"]!.waiting(fast.body.id), "the later command to start");
  assert.deepEqual(slow.map((c) => b.trail(c.body.id)), [[], [], [], []], "none of the slow ones was ACKED yet");
  for (const r of held) r();
  await Promise.all(slowDeliveries);
  for (const c of [...slow, fast]) {
    await until(() => b.handlers["inventory.refresh"]!.waiting(c.body.id), "each command to start");
    b.handlers["inventory.refresh"]!.open(c.body.id);
  }
  await b.dispatcher.settled();
  for (const c of [...slow, fast]) assert.deepEqual(b.trail(c.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
});

Deno.test("a self-terminating handler waiting for its own end lets the daemon stop: no result, the entry stays running", async () => {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  const updates: CommandUpdate[] = [];
  let started = false;
  const registry = new HandlerRegistry().register(
    new FakeHandler("node.reboot", {
      result: (ctx) =>
        new Promise((_, reject) => {
          started = true;
          ctx.stopping?.addEventListener("abort", () => reject(new LeftForRecovery("the daemon stops for it")));
        }),
    }),
  );
  const d = plainDispatcher({ journal, registry, updates, nodeId: "n" });
  await d.deliver({
    bodyBytes: new Uint8Array([1]),
    attempt: 1,
    body: {
      id: "01S",
      nodeId: "n",
      kind: "node.reboot",
      notAfterMs: NOW + 1,
      seq: 1,
      lane: "control",
      minGeneration: 0,
      retrySafe: true,
      idempotencyKey: "",
      selfTerminating: true,
      attested: false,
      workflowId: "",
      stepId: "",
      traceparent: "",
      batchId: "",
    },
  });
  await until(() => started, "the handler to start");
  await d.stop(); // returns: the handler gave up its wait
  assert.deepEqual(updates.map((u) => u.state), ["ACKED", "RUNNING"], "no terminal update");
  assert.equal((await journal.get("01S"))?.state, "running", "left for the next process");
  await journal.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("the journal is told an accepted is coming only while the checks run, released before any journal write, on every verdict", async (t) => {
  const events: string[] = [];
  let open = 0;
  await using b = await openBench({
    wrapJournal: (j) =>
      new Proxy(j, {
        get(target, p) {
          const v = Reflect.get(target, p);
          if (p === "expectWrite") {
            return () => {
              open++;
              events.push("expect");
              const release = (v as () => () => void).call(target);
              let done = false;
              return () => {
                if (!done) open--, events.push("release");
                done = true;
                release();
              };
            };
          }
          if (typeof p === "string" && ["accept", "reject", "cancel", "finish", "expire", "markRunning"].includes(p)) {
            return (...a: unknown[]) => {
              // A write waits for a group commit: made while an expectation is held, it would wait for itself.
              events.push(`${p}(open=${open})`);
              return (v as (...x: unknown[]) => unknown).apply(target, a);
            };
          }
          return typeof v === "function" ? v.bind(target) : v;
        },
      }),
  });
  const run = async (cmd: Awaited<ReturnType<typeof b.command>>) => {
    events.length = 0;
    await b.dispatcher.deliver(cmd);
    await b.dispatcher.settled();
    return [...events];
  };
  await t.step("admitted: released before its accept", async () => {
    const cmd = await b.command({ kind: "inventory.refresh" });
    assert.deepEqual(await run(cmd), ["expect", "release", "accept(open=0)", "finish(open=0)"]);
    assert.deepEqual(b.trail(cmd.body.id), ["ACKED", "RUNNING", "SUCCEEDED"]);
  });
  await t.step("BAD_SIGNATURE: released before its journaled rejection", async () => {
    const cmd = await b.command({ kind: "inventory.refresh" }, { sign: false });
    assert.deepEqual(await run(cmd), ["expect", "release", "reject(open=0)"]);
    assert.deepEqual(b.trail(cmd.body.id), ["REJECTED:BAD_SIGNATURE"]);
  });
  await t.step("deferred for a newer spec: released, nothing written", async () => {
    const cmd = await b.command({ kind: "inventory.refresh", minGeneration: 9 });
    assert.deepEqual(await run(cmd), ["expect", "release"]);
    assert.equal(b.dispatcher.phaseOf(cmd.body.id), "deferred");
  });
  await t.step("a duplicate of a done command: answered from the journal, no checks, nothing expected", async () => {
    const first = await b.command({ kind: "inventory.refresh" });
    await run(first);
    assert.deepEqual(await run(first), []);
  });
  assert.equal(open, 0);
});
