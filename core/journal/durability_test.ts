import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { JournalDurabilityError, JournalStopped } from "./errors.ts";
import { bytes, faultyFactory, openTest, tempDataDir, testClock } from "./journal_testing.ts";
import { IDENTITY_FILE } from "./identity_file.ts";
import { JOURNAL_FILE } from "./journal.ts";

const NRS = { kind: "gpu.reset", retrySafe: false, selfTerminating: false };

/** A second connection, as another process would see the file. */
function peek(dir: string, sql: string): Record<string, unknown>[] {
  const db = new DatabaseSync(join(dir, JOURNAL_FILE), { readOnly: true });
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

Deno.test("the journal runs in WAL mode (synchronous=NORMAL; the journal syncs the WAL itself)", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  await j.close();
  const db = new DatabaseSync(join(tmp.dir, JOURNAL_FILE));
  assert.equal((db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode, "wal");
  db.close();
});

Deno.test("the journal refuses to open with durability weaker than WAL + synchronous=NORMAL", async (t) => {
  const cases = [
    { name: "synchronous=OFF", faults: { synchronous: 0 } },
    { name: "journal_mode=delete", faults: { journalMode: "delete" } },
    { name: "journal_mode=memory", faults: { journalMode: "memory" } },
  ];
  for (const c of cases) {
    await t.step(c.name, async () => {
      await using tmp = await tempDataDir();
      const f = faultyFactory(c.faults);
      await assert.rejects(
        () => openTest(tmp.dir, testClock(), { driver: f.factory }),
        (e: unknown) => e instanceof JournalDurabilityError && e.reason === "weak-durability",
      );
      // The lock was released: a proper open succeeds.
      const j = await openTest(tmp.dir, testClock());
      await j.close();
    });
  }
});

Deno.test("accepted is committed before accept() returns: another connection sees it at once", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  await j.accept("c1", NRS);
  assert.deepEqual(peek(tmp.dir, "SELECT id, state FROM commands").map((r) => [r.id, r.state]), [["c1", "accepted"]]);
  await j.markRunning("c1");
  assert.equal(peek(tmp.dir, "SELECT state, boot_id FROM commands")[0]?.boot_id, "boot-1");
  await j.finish("c1", { state: "SUCCEEDED", body: bytes("ok") });
  assert.equal(peek(tmp.dir, "SELECT state FROM commands")[0]?.state, "done");
  await j.close();
});

Deno.test("every write commits (one fsync) before it returns; concurrent acceptances share one commit", async () => {
  await using tmp = await tempDataDir();
  const f = faultyFactory({});
  const j = await openTest(tmp.dir, testClock(), { driver: f.factory });
  const before = f.driver().commits;
  await j.accept("one", NRS);
  assert.equal(f.driver().commits, before + 1);
  await Promise.all(Array.from({ length: 50 }, (_, i) => j.accept(`g${i}`, NRS)));
  assert.equal(f.driver().commits, before + 2, "50 concurrent acceptances committed together");
  assert.equal(j.stats.maxGroup, 50);
  assert.equal(peek(tmp.dir, "SELECT count(*) AS n FROM commands")[0]?.n, 51);
  await j.close();
});

Deno.test("a refusal inside a group rolls back only its own operation", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  await j.accept("dup", NRS);
  const results = await Promise.allSettled([j.accept("a", NRS), j.accept("dup", NRS), j.accept("b", NRS)]);
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
  assert.equal(peek(tmp.dir, "SELECT count(*) AS n FROM commands")[0]?.n, 3);
  await j.close();
});

Deno.test("a failed write/fsync stops the journal (fail-stop): no retry, every later call refuses", async () => {
  await using tmp = await tempDataDir();
  const f = faultyFactory({});
  let stops = 0;
  const j = await openTest(tmp.dir, testClock(), { driver: f.factory, onStop: () => stops++ });
  await j.accept("before", NRS);
  f.driver().faults.failCommit = true;
  const commitsBefore = f.driver().execs.filter((s) => s === "COMMIT").length;
  const r = await Promise.allSettled([j.accept("x", NRS), j.accept("y", NRS)]);
  assert.ok(r.every((x) => x.status === "rejected" && x.reason instanceof JournalStopped));
  f.driver().faults.failCommit = false;
  await assert.rejects(() => j.accept("z", NRS), JournalStopped);
  await assert.rejects(() => j.get("before"), JournalStopped);
  assert.equal(f.driver().execs.filter((s) => s === "COMMIT").length, commitsBefore + 1, "one commit tried, no retry");
  assert.equal(stops, 1);
  assert.ok(j.stopped instanceof JournalStopped);
  await j.close();
  const j2 = await openTest(tmp.dir, testClock());
  assert.equal(await j2.get("x"), null, "the failed group left nothing behind");
  assert.equal((await j2.get("before"))?.state, "accepted");
  await j2.close();
});

Deno.test("identity.json mirrors the server time mark, mode 0600, written atomically", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  await j.observeServerTime(1_000_000, "welcome");
  const path = join(tmp.dir, IDENTITY_FILE);
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  assert.equal(JSON.parse(await Deno.readTextFile(path)).server_time_mark, 1_000_000);
  const leftovers = [...Deno.readDirSync(tmp.dir)].filter((e) => e.name.includes(".tmp-"));
  assert.deepEqual(leftovers, []);
  await j.close();
});

Deno.test("a failed write statement stops the journal too, and the group's other operations fail with it", async () => {
  await using tmp = await tempDataDir();
  const f = faultyFactory({});
  const j = await openTest(tmp.dir, testClock(), { driver: f.factory });
  await j.accept("ok", NRS);
  f.driver().faults.failWrites = true;
  const r = await Promise.allSettled([j.get("ok"), j.accept("x", NRS)]);
  assert.deepEqual(r.map((x) => x.status), ["rejected", "rejected"]);
  assert.ok(r.every((x) => x.status === "rejected" && x.reason instanceof JournalStopped));
  assert.match(j.stopped?.message ?? "", /disk is full/);
  await j.close();
  const j2 = await openTest(tmp.dir, testClock());
  assert.equal((await j2.get("ok"))?.state, "accepted");
  assert.equal(await j2.get("x"), null);
  await j2.close();
});

Deno.test("a failed finish (one UPDATE … RETURNING) stops the journal and leaves the entry accepted", async () => {
  await using tmp = await tempDataDir();
  const f = faultyFactory({});
  const j = await openTest(tmp.dir, testClock(), { driver: f.factory });
  await j.accept("c", NRS);
  f.driver().faults.failWrites = true;
  await assert.rejects(j.finish("c", { state: "SUCCEEDED" }), JournalStopped);
  assert.match(j.stopped?.message ?? "", /disk is full/);
  await j.close();
  const j2 = await openTest(tmp.dir, testClock());
  assert.equal((await j2.get("c"))?.state, "accepted");
  await j2.close();
});
