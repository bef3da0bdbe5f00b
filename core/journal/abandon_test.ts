import assert from "node:assert/strict";
import { JournalError } from "./errors.ts";
import { lockHolder } from "./lock.ts";
import { openTest, tempDataDir, testClock } from "./journal_testing.ts";

const RESET = { kind: "gpu.reset", retrySafe: false, selfTerminating: false };

Deno.test("abandon() lets go of the data dir at once, as a killed process does: the next open recovers the rest", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  let stops = 0;
  const j = await openTest(tmp.dir, clock, { incarnation: "inc-killed", onStop: () => void stops++ });
  await j.accept("c1", RESET);
  const late = j.accept("c2", RESET); // submitted, not awaited: the kill comes before it is durable
  j.abandon();
  await assert.rejects(late);
  await assert.rejects(() => j.accept("c3", RESET), (e: unknown) => e instanceof JournalError);
  assert.equal(lockHolder(tmp.dir), null, "the lock went with the abandoned journal");
  const again = await openTest(tmp.dir, clock, { incarnation: "inc-next" });
  try {
    assert.equal(again.journalId, j.journalId, "the same journal, not a new one");
    const r = await again.resolve("c1", RESET);
    assert.equal(r.action, "interrupted", "c1 was durable before the kill and is left by an earlier process");
    assert.equal((await again.resolve("c3", RESET)).action, "execute", "nothing was written after the kill");
  } finally {
    await again.close();
  }
  assert.ok(stops <= 1, "a write cut off by the kill stops the abandoned journal at most once");
});
