import assert from "node:assert/strict";
import { bytes, openTest, tempDataDir, testClock } from "./journal_testing.ts";

Deno.test("event sequence numbers increase from 1 per journal_id and survive reopening", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock);
  const seqs = [];
  for (const c of ["metric", "transition", "result"] as const) {
    const r = await j.appendEvent(c, bytes(c));
    if (r.appended) seqs.push(r.seq);
  }
  assert.deepEqual(seqs, [1, 2, 3]);
  const jid = j.journalId;
  await j.close();
  const j2 = await openTest(tmp.dir, clock);
  assert.equal(j2.journalId, jid);
  const r = await j2.appendEvent("metric", bytes("m"));
  assert.equal(r.appended && r.seq, 4);
  assert.equal((await j2.meta()).eventSeq, 4);
  await j2.close();
});

Deno.test("acks are cumulative; an ack for another journal_id is ignored", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  for (let i = 0; i < 5; i++) await j.appendEvent("transition", bytes(`t${i}`));
  assert.equal(await j.ackEvents("another-journal", 5), 0);
  assert.equal((await j.unackedEvents()).length, 5);
  assert.equal(await j.ackEvents(j.journalId, 3), 3);
  assert.deepEqual((await j.unackedEvents()).map((e) => e.seq), [4, 5]);
  assert.deepEqual((await j.unackedEvents({ afterSeq: 4 })).map((e) => e.seq), [5]);
  assert.equal(await j.ackEvents(j.journalId, 2), 0, "a stale ack changes nothing");
  const totals = await j.eventTotals();
  assert.equal(totals.transition.count, 2);
  const next = await j.appendEvent("result", bytes("r"));
  assert.equal(next.appended && next.seq, 6, "acked sequence numbers are never reused");
  await j.close();
});

Deno.test("the spec part keeps the last full spec, its hash and its signature", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  assert.equal(await j.getSpec(), null);
  await j.putSpec({ generation: 3, bytes: bytes("spec3"), hash: "h3" });
  await j.putSpec({ generation: 4, bytes: bytes("spec4"), hash: "h4", signature: bytes("sig4") });
  await j.setAppliedGeneration(4);
  await j.setLastEpoch(7);
  await j.setNodeId("node-1");
  await j.close();
  const j2 = await openTest(tmp.dir, testClock());
  assert.deepEqual(await j2.getSpec(), { generation: 4, bytes: bytes("spec4"), hash: "h4", signature: bytes("sig4") });
  const m = await j2.meta();
  assert.deepEqual([m.appliedGeneration, m.lastEpoch, m.nodeId], [4, 7, "node-1"]);
  await j2.close();
});

Deno.test("announced allocations follow the Bound/Released events they ride, survive acks and reopening", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock);
  assert.deepEqual(await j.announcedAllocations(), new Set());
  await j.appendEvent("transition", bytes("bound a"), { allocationId: "a", bound: true });
  await j.appendEvent("transition", bytes("bound b"), { allocationId: "b", bound: true });
  await j.appendEvent("transition", bytes("released a"), { allocationId: "a", bound: false });
  await j.appendEvent("transition", bytes("failed c"));
  assert.deepEqual(await j.announcedAllocations(), new Set(["b"]));
  await assert.rejects(
    () => j.appendEvent("metric", bytes("m"), { allocationId: "d", bound: true }),
    TypeError,
    "a droppable metric never carries an announcement",
  );
  await j.ackEvents(j.journalId, 4);
  await j.close();
  const j2 = await openTest(tmp.dir, clock);
  assert.deepEqual(await j2.announcedAllocations(), new Set(["b"]));
  await j2.close();
});

Deno.test("a journal written before announced allocations existed opens with the table added, empty", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock);
  await j.appendEvent("transition", bytes("e"));
  await j.close();
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(`${tmp.dir}/journal.db`);
  db.exec("DROP TABLE announced_allocations");
  db.close();
  const j2 = await openTest(tmp.dir, clock);
  assert.deepEqual(await j2.announcedAllocations(), new Set());
  await j2.appendEvent("transition", bytes("bound"), { allocationId: "x", bound: true });
  assert.deepEqual(await j2.announcedAllocations(), new Set(["x"]));
  assert.equal((await j2.unackedEvents()).length, 2, "the older events are kept");
  await j2.close();
});
