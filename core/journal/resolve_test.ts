import assert from "node:assert/strict";
import { CommandStateError } from "./errors.ts";
import { resolveEntry } from "./resolve.ts";
import { bytes, openTest, tempDataDir, testClock } from "./journal_testing.ts";
import type { JournalEntry, ResolveFlags } from "./types.ts";

const ME = { incarnation: "inc-now", bootId: "boot-now" };
const base = { id: "01J", kind: "k", retrySafe: false, selfTerminating: false, createdAt: 1, updatedAt: 1 };
const RS: ResolveFlags = { retrySafe: true, selfTerminating: false };
const NRS: ResolveFlags = { retrySafe: false, selfTerminating: false };
const ST_NRS: ResolveFlags = { retrySafe: false, selfTerminating: true };
const ST_RS: ResolveFlags = { retrySafe: true, selfTerminating: true };

const done: JournalEntry = {
  ...base,
  state: "done",
  incarnation: "inc-old",
  result: { state: "SUCCEEDED", bootId: "boot-old" },
  resultAcked: false,
};

/** One row per row of the seed's table (000 §Duplicates and crash recovery), plus the order-sensitive variants. */
const TABLE: { row: string; entry: JournalEntry | null; flags: ResolveFlags; want: string }[] = [
  { row: "none → execute", entry: null, flags: NRS, want: "execute" },
  { row: "done → resend the stored result", entry: done, flags: NRS, want: "resend" },
  {
    row: "accepted in this process → re-attach",
    entry: { ...base, state: "accepted", incarnation: ME.incarnation },
    flags: NRS,
    want: "reattach",
  },
  {
    row: "running in this process → re-attach",
    entry: { ...base, state: "running", incarnation: ME.incarnation, bootId: ME.bootId },
    flags: ST_NRS,
    want: "reattach",
  },
  {
    row: "running, self-terminating, from an earlier boot → SUCCEEDED rebooted",
    entry: { ...base, state: "running", incarnation: "inc-old", bootId: "boot-old" },
    flags: ST_NRS,
    want: "rebooted",
  },
  {
    row: "left by an earlier process, retry-safe → re-execute",
    entry: { ...base, state: "accepted", incarnation: "inc-old" },
    flags: RS,
    want: "reexecute",
  },
  {
    row: "left by an earlier process, not retry-safe → FAILED interrupted",
    entry: { ...base, state: "running", incarnation: "inc-old", bootId: ME.bootId },
    flags: NRS,
    want: "interrupted",
  },
  {
    row: "variant: running self-terminating retry-safe in the same boot (crash before the reboot) → re-execute",
    entry: { ...base, state: "running", incarnation: "inc-old", bootId: ME.bootId },
    flags: ST_RS,
    want: "reexecute",
  },
  {
    row: "variant: accepted self-terminating not retry-safe after a reboot (effect never started) → interrupted",
    entry: { ...base, state: "accepted", incarnation: "inc-old" },
    flags: ST_NRS,
    want: "interrupted",
  },
  {
    row: "variant: running self-terminating retry-safe from an earlier boot → rebooted, not re-executed",
    entry: { ...base, state: "running", incarnation: "inc-old", bootId: "boot-old" },
    flags: ST_RS,
    want: "rebooted",
  },
];

Deno.test("resolveEntry() follows the seed's resolution table row by row", async (t) => {
  for (const r of TABLE) {
    await t.step(r.row, () => {
      const got = resolveEntry(r.entry, r.flags, ME);
      assert.equal(got.action, r.want);
      if (got.action === "rebooted") {
        assert.deepEqual(got.result, {
          state: "SUCCEEDED",
          bootId: ME.bootId,
          rebooted: true,
          previousBootId: "boot-old",
        });
      }
      if (got.action === "interrupted") {
        assert.equal(got.result.state, "FAILED");
        assert.equal(got.result.code, "interrupted");
        assert.equal(got.result.bootId, ME.bootId);
      }
    });
  }
});

Deno.test("Journal.resolve() settles the rebooted and interrupted rows durably and resends them afterwards", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j1 = await openTest(tmp.dir, clock, { incarnation: "inc-1", bootId: "boot-1" });
  await j1.accept("reboot", { kind: "node.reboot", ...ST_RS });
  await j1.markRunning("reboot");
  await j1.accept("wipe", { kind: "disk.wipe", ...NRS });
  await j1.close();

  const j2 = await openTest(tmp.dir, clock, { incarnation: "inc-2", bootId: "boot-2" });
  const r1 = await j2.resolve("reboot", ST_RS);
  assert.equal(r1.action, "rebooted");
  const r2 = await j2.resolve("wipe", NRS);
  assert.equal(r2.action, "interrupted");
  await j2.close();

  const j3 = await openTest(tmp.dir, clock, { incarnation: "inc-3", bootId: "boot-2" });
  const again = await j3.resolve("reboot", ST_RS);
  assert.equal(again.action, "resend");
  assert.equal(again.action === "resend" && again.entry.result.previousBootId, "boot-1");
  const w = await j3.resolve("wipe", NRS);
  assert.equal(w.action === "resend" && w.entry.result.code, "interrupted");
  await j3.close();
});

Deno.test("a journaled rejection answers a duplicate delivery the same way", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  const d = await j.reject("c1", { kind: "gpu.reset", ...NRS }, "EXPIRED", "past not_after");
  assert.deepEqual([d.result.state, d.result.code], ["REJECTED", "EXPIRED"]);
  const r = await j.resolve("c1", NRS);
  assert.equal(r.action, "resend");
  assert.equal(r.action === "resend" && r.entry.result.code, "EXPIRED");
  await assert.rejects(() => j.reject("c2", { kind: "k", ...NRS }, "BUSY" as never), TypeError);
  assert.equal(await j.get("c2"), null, "BUSY is never journaled");
  await j.close();
});

Deno.test("cancelled is a journal outcome and a real outcome wins over a late cancel", async (t) => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const old = await openTest(tmp.dir, clock, { incarnation: "old" });
  await old.accept("left", { kind: "logs.collect", ...RS });
  await old.close();
  const j = await openTest(tmp.dir, clock, { incarnation: "now" });
  const LOGS = { kind: "logs.collect", ...RS };
  await t.step("a command still queued here", async () => {
    await j.accept("q", LOGS);
    assert.equal((await j.cancel("q", LOGS, "cancel requested")).result.state, "CANCELLED");
  });
  await t.step(
    "a deferred command with no entry yet is journaled CANCELLED; a duplicate gets the same answer",
    async () => {
      assert.equal((await j.cancel("deferred", LOGS)).result.state, "CANCELLED");
      const r = await j.resolve("deferred", RS);
      assert.equal(r.action === "resend" && r.entry.result.state, "CANCELLED");
    },
  );
  await t.step("a retry-safe command an earlier process left, awaiting redelivery", async () => {
    assert.equal((await j.cancel("left", LOGS)).result.state, "CANCELLED");
  });
  await t.step("a running command refuses: its real outcome comes", async () => {
    await j.accept("run", { kind: "node.reboot", ...ST_RS });
    await j.markRunning("run");
    await assert.rejects(
      () => j.cancel("run", { kind: "node.reboot", ...ST_RS }),
      (e: unknown) => e instanceof CommandStateError && e.reason === "running",
    );
  });
  await t.step("a done command keeps its real outcome", async () => {
    await j.accept("r", { kind: "gpu.reset", ...NRS });
    await j.finish("r", { state: "SUCCEEDED", body: bytes("reset") });
    const late = await j.cancel("r", { kind: "gpu.reset", ...NRS });
    assert.equal(late.result.state, "SUCCEEDED");
    assert.deepEqual(late.result.body, bytes("reset"));
  });
  await j.close();
});
