import assert from "node:assert/strict";
import { CommandStateError } from "./errors.ts";
import { openTest, tempDataDir, testClock } from "./journal_testing.ts";
import type { Journal } from "./journal.ts";

const NRS = { kind: "gpu.reset", retrySafe: false, selfTerminating: false };

async function refused(p: Promise<unknown>, reason: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof CommandStateError && e.reason === reason);
}

Deno.test("each lifecycle step refuses what does not belong to it", async (t) => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const old = await openTest(tmp.dir, clock, { incarnation: "old" });
  await old.accept("left", NRS);
  await old.close();
  const j: Journal = await openTest(tmp.dir, clock, { incarnation: "now" });
  await j.accept("live", NRS);
  await j.accept("fin", NRS);
  await j.finish("fin", { state: "FAILED", code: "internal" });
  const rows: { name: string; run: () => Promise<unknown>; reason: string }[] = [
    { name: "accept of an id in flight here", run: () => j.accept("live", NRS), reason: "in-flight" },
    { name: "accept of a done id", run: () => j.accept("fin", NRS), reason: "already-done" },
    { name: "markRunning of an unknown id", run: () => j.markRunning("nope"), reason: "not-accepted" },
    { name: "markRunning of an earlier process's entry", run: () => j.markRunning("left"), reason: "not-accepted" },
    { name: "finish of an unknown id", run: () => j.finish("nope", { state: "SUCCEEDED" }), reason: "not-accepted" },
    {
      name: "finish of an earlier process's entry",
      run: () => j.finish("left", { state: "SUCCEEDED" }),
      reason: "not-accepted",
    },
    { name: "reject of an id in flight here", run: () => j.reject("live", NRS, "EXPIRED"), reason: "in-flight" },
    { name: "expire of an unknown id", run: () => j.expire("nope", "late"), reason: "not-accepted" },
    { name: "expire of an earlier process's entry", run: () => j.expire("left", "late"), reason: "not-accepted" },
  ];
  for (const r of rows) await t.step(r.name, () => refused(r.run(), r.reason));
  await t.step("finish() with REJECTED is a TypeError (use reject())", async () => {
    await assert.rejects(() => j.finish("live", { state: "REJECTED", code: "EXPIRED" }), TypeError);
  });
  await t.step("the journal stays usable after refusals", async () => {
    assert.equal((await j.markRunning("live")).bootId, "boot-1");
    assert.equal((await j.markRunning("live")).state, "running", "markRunning is idempotent");
    assert.equal((await j.finish("live", { state: "SUCCEEDED" })).result.bootId, "boot-1");
  });
  await j.close();
});

Deno.test("a retry-safe entry an earlier process left that fails its checks again is rejected and journaled", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const old = await openTest(tmp.dir, clock, { incarnation: "old" });
  await old.accept("inv", { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
  await old.close();
  const j = await openTest(tmp.dir, clock, { incarnation: "now" });
  const d = await j.reject("inv", { kind: "inventory.refresh", retrySafe: true, selfTerminating: false }, "EXPIRED");
  assert.deepEqual([d.state, d.result.state, d.result.code, d.incarnation], ["done", "REJECTED", "EXPIRED", "now"]);
  await j.close();
});

Deno.test("expire() settles an accepted entry of this process REJECTED/EXPIRED; a running one is refused", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(), { incarnation: "now" });
  await j.accept("late", NRS);
  const d = await j.expire("late", "past not_after at its start");
  assert.deepEqual([d.state, d.result.state, d.result.code, d.result.message, d.result.bootId], [
    "done",
    "REJECTED",
    "EXPIRED",
    "past not_after at its start",
    "boot-1",
  ]);
  assert.equal(
    (await j.expire("late", "again")).result.message,
    "past not_after at its start",
    "done keeps its result",
  );
  await j.accept("started", { ...NRS, selfTerminating: true });
  await j.markRunning("started");
  await refused(j.expire("started", "late"), "running");
  await j.close();
});

Deno.test("finish() answers exactly the entry a read of the row gives back, for every shape of outcome", async (t) => {
  await using tmp = await tempDataDir();
  const j: Journal = await openTest(tmp.dir, testClock(), { incarnation: "now" });
  const outcomes = [
    { name: "bare SUCCEEDED", outcome: { state: "SUCCEEDED" } },
    {
      name: "SUCCEEDED with a message and a result body",
      outcome: { state: "SUCCEEDED", message: "ok", body: new Uint8Array([1, 2, 3]) },
    },
    { name: "SUCCEEDED with an empty body", outcome: { state: "SUCCEEDED", body: new Uint8Array() } },
    { name: "FAILED with a code", outcome: { state: "FAILED", code: "internal", message: "boom" } },
    { name: "FAILED with an empty code and message", outcome: { state: "FAILED", code: "", message: "" } },
    { name: "CANCELLED", outcome: { state: "CANCELLED", message: "by the operator" } },
  ] as const;
  let n = 0;
  for (const o of outcomes) {
    await t.step(o.name, async () => {
      const id = `fin-${n++}`;
      await j.accept(id, { kind: "diag.dcgm", retrySafe: true, selfTerminating: n % 2 === 0 });
      if (n % 2 === 0) await j.markRunning(id);
      const done = await j.finish(id, o.outcome);
      assert.deepEqual(done, await j.get(id));
    });
  }
  await j.close();
});
