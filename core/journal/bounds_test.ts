import assert from "node:assert/strict";
import { boundsFromConfig, DEFAULT_BOUNDS, EVENT_ROW_OVERHEAD } from "./bounds.ts";
import { JournalBusy } from "./errors.ts";
import { bytes, faultyFactory, openTest, tempDataDir, testClock } from "./journal_testing.ts";

const RS = { kind: "inventory.refresh", retrySafe: true, selfTerminating: false };

Deno.test("bounds default to 64 MiB and 10,000 events; config may lower them, never raise them", async (t) => {
  assert.deepEqual(DEFAULT_BOUNDS, { maxBytes: 64 * 1024 * 1024, maxUnackedEvents: 10_000 });
  await t.step("lower is kept", () => {
    assert.deepEqual(boundsFromConfig({ maxBytes: 1024, maxUnackedEvents: 5 }), {
      maxBytes: 1024,
      maxUnackedEvents: 5,
    });
  });
  await t.step("raise is refused", () => {
    assert.throws(() => boundsFromConfig({ maxBytes: 64 * 1024 * 1024 + 1, maxUnackedEvents: 10 }), RangeError);
    assert.throws(() => boundsFromConfig({ maxBytes: 1024, maxUnackedEvents: 10_001 }), RangeError);
  });
  await t.step("zero is refused", () => {
    assert.throws(() => boundsFromConfig({ maxBytes: 0, maxUnackedEvents: 10 }), RangeError);
  });
});

Deno.test("when the event count bound is reached the oldest metric events go first", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(), { bounds: { maxBytes: 1 << 20, maxUnackedEvents: 4 } });
  await j.appendEvent("metric", bytes("m1"));
  await j.appendEvent("transition", bytes("t2"));
  await j.appendEvent("metric", bytes("m3"));
  await j.appendEvent("result", bytes("r4"));
  const r = await j.appendEvent("transition", bytes("t5"));
  assert.deepEqual(r, { appended: true, seq: 5, droppedMetrics: 1 });
  const seqs = (await j.unackedEvents()).map((e) => `${e.seq}:${e.class}`);
  assert.deepEqual(seqs, ["2:transition", "3:metric", "4:result", "5:transition"]);
  await j.appendEvent("metric", bytes("m6"));
  assert.deepEqual((await j.unackedEvents()).map((e) => e.seq), [2, 4, 5, 6], "m3 dropped for m6");
  await j.close();
});

Deno.test("when the byte bound is reached the oldest metric events go first, several if needed", async () => {
  await using tmp = await tempDataDir();
  const each = 100 + EVENT_ROW_OVERHEAD;
  const j = await openTest(tmp.dir, testClock(), { bounds: { maxBytes: each * 4, maxUnackedEvents: 100 } });
  const p = new Uint8Array(100);
  for (let i = 0; i < 3; i++) await j.appendEvent("metric", p);
  await j.appendEvent("transition", p);
  const big = new Uint8Array(100 + each * 2);
  const r = await j.appendEvent("result", big);
  assert.deepEqual(r, { appended: true, seq: 5, droppedMetrics: 3 });
  assert.deepEqual((await j.unackedEvents()).map((e) => e.class), ["transition", "result"]);
  await j.close();
});

Deno.test("results and transitions are never dropped: they pass the bound and the journal answers BUSY", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(), { bounds: { maxBytes: 1 << 20, maxUnackedEvents: 3 } });
  await j.appendEvent("metric", bytes("m"));
  for (let i = 0; i < 3; i++) await j.appendEvent(i % 2 ? "result" : "transition", bytes(`x${i}`));
  assert.deepEqual((await j.unackedEvents()).map((e) => e.class), ["transition", "result", "transition"]);
  const over = await j.appendEvent("result", bytes("over"));
  assert.equal(over.appended, true, "a result past the bound is still journaled");
  assert.equal((await j.unackedEvents()).length, 4);
  const m = await j.appendEvent("metric", bytes("no room"));
  assert.deepEqual(m, { appended: false, droppedMetrics: 0 }, "a metric that cannot fit is not journaled");
  assert.equal(await j.isFull(), true);
  await assert.rejects(() => j.accept("c1", RS), (e: unknown) => e instanceof JournalBusy && e.reason === "BUSY");
  assert.equal(await j.get("c1"), null, "BUSY is never journaled");
  const last = (await j.unackedEvents()).at(-1)!.seq;
  assert.equal(await j.ackEvents(j.journalId, last), 4);
  assert.equal(await j.isFull(), false);
  assert.equal((await j.accept("c1", RS)).state, "accepted", "acks drained the backlog");
  await j.close();
});

Deno.test("metric events alone never make the journal BUSY", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(), { bounds: { maxBytes: 1 << 20, maxUnackedEvents: 2 } });
  for (let i = 0; i < 5; i++) await j.appendEvent("metric", bytes(`m${i}`));
  assert.deepEqual((await j.unackedEvents()).map((e) => e.seq), [4, 5]);
  assert.equal(await j.isFull(), false);
  await j.accept("c", RS);
  await j.close();
});

Deno.test("an event larger than the whole byte bound is refused and leaves the journal usable", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(), { bounds: { maxBytes: 1000, maxUnackedEvents: 10 } });
  await assert.rejects(() => j.appendEvent("result", new Uint8Array(1000)), RangeError);
  const r = await j.appendEvent("result", new Uint8Array(10));
  assert.deepEqual(r, { appended: true, seq: 1, droppedMetrics: 0 }, "no sequence number was spent");
  await j.close();
});

Deno.test("accept reads the backlog once until an event is appended or acked, and sees every change", async () => {
  await using tmp = await tempDataDir();
  const f = faultyFactory({});
  const j = await openTest(tmp.dir, testClock(), {
    driver: f.factory,
    bounds: { maxBytes: 1 << 20, maxUnackedEvents: 2 },
  });
  const reads = () => f.driver().queries.filter((s) => s.includes("FROM event_totals")).length;
  const before = reads();
  for (let i = 0; i < 3; i++) await j.accept(`a${i}`, RS);
  assert.equal(reads() - before, 1, "three accepts, one read of the backlog");
  await j.appendEvent("result", bytes("r1"));
  await j.appendEvent("transition", bytes("t1"));
  await assert.rejects(() => j.accept("busy", RS), JournalBusy, "an append in between is seen");
  await assert.rejects(() => j.accept("busy2", RS), JournalBusy);
  await j.ackEvents(j.journalId, 2);
  assert.equal((await j.accept("after-ack", RS)).state, "accepted", "an ack in between is seen");
  await j.close();
});
