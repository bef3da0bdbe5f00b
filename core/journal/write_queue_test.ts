import assert from "node:assert/strict";
import { JournalRefusal, JournalStopped } from "./errors.ts";
import type { SqlDriver } from "./sql_driver.ts";
import { WriteQueue } from "./write_queue.ts";

/** A connection that records what runs on it. */
function recorder(): SqlDriver & { log: string[] } {
  const log: string[] = [];
  return {
    name: "recorder",
    log,
    exec: (sql) => (log.push(sql), Promise.resolve()),
    run: (sql) => (log.push(sql), Promise.resolve(1)),
    all: (sql) => (log.push(sql), Promise.resolve([])),
    close: () => Promise.resolve(),
  };
}

/** A CommitSync whose syncs the test ends by hand: the oldest still running, or any one by its number (from 1). */
function heldSyncs() {
  const running = new Map<number, { resolve(): void; reject(e: Error): void }>();
  let started = 0;
  return {
    get started() {
      return started;
    },
    /** How many syncs run now. */
    get inFlight() {
      return running.size;
    },
    sync: () =>
      Promise.resolve(() => {
        const n = ++started;
        return new Promise<void>((resolve, reject) => running.set(n, { resolve, reject }));
      }),
    release(n = Math.min(...running.keys())) {
      running.get(n)?.resolve();
      running.delete(n);
    },
    fail(n: number, e: Error) {
      running.get(n)?.reject(e);
      running.delete(n);
    },
  };
}

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

async function until(f: () => boolean): Promise<void> {
  while (!f()) await tick();
}

Deno.test("no operation resolves before the sync after its group's COMMIT returned", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync);
  let done = false;
  const p = q.submit((d) => d.run("INSERT 1")).then(() => done = true);
  await until(() => syncs.started === 1);
  assert.ok(db.log.includes("COMMIT"), "committed");
  await tick();
  assert.equal(done, false, "resolved only after the sync");
  syncs.release();
  await p;
  assert.equal(done, true);
});

Deno.test("with one sync allowed, the next group's operations run in a new transaction that commits after it", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync, 1);
  const first = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  let laterDone = false;
  const later = Promise.all([q.submit((d) => d.run("INSERT b")), q.submit((d) => d.run("INSERT c"))]).then(() =>
    laterDone = true
  );
  await until(() => db.log.includes("INSERT c"));
  await tick(); // a timer fired while the sync was in flight
  assert.deepEqual(
    db.log.filter((s) => !s.includes("op")),
    ["BEGIN IMMEDIATE", "INSERT a", "COMMIT", "BEGIN IMMEDIATE", "INSERT b", "INSERT c"],
    "b and c ran while a's sync was in flight; their COMMIT waits for it",
  );
  assert.equal(syncs.started, 1, "one sync at a time");
  syncs.release();
  await first;
  await until(() => syncs.started === 2);
  assert.equal(db.log.filter((s) => s === "COMMIT").length, 2);
  assert.equal(laterDone, false, "b and c resolve only after their own sync");
  syncs.release();
  await later;
  assert.equal(q.stats.commits, 2);
  assert.equal(q.stats.maxGroup, 2, "b and c shared one commit and one sync");
});

Deno.test("a call its caller makes as soon as the last one resolved joins the next group, not the one after", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync);
  // A client that, like a command's, makes its next call when the previous one is done, through promise jobs alone
  // (a few awaits deep), and a call that was already waiting for the next group.
  const next = q.submit((d) => d.run("INSERT a")).then(async () => {
    await null;
    await null;
    return await q.submit((d) => d.run("INSERT c"));
  });
  await until(() => syncs.started === 1);
  const waiting = q.submit((d) => d.run("INSERT b"));
  syncs.release();
  await until(() => syncs.started === 2);
  syncs.release();
  await Promise.all([next, waiting]);
  assert.equal(q.stats.commits, 2, "b and c shared the second commit");
  assert.equal(q.stats.maxGroup, 2);
});

Deno.test("read() answers at once while a group's sync is in flight, without a transaction", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync);
  const w = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  const before = db.log.length;
  const rows = await q.read((d) => d.all("SELECT x"));
  assert.deepEqual(rows, []);
  assert.deepEqual(db.log.slice(before), ["SELECT x"], "no BEGIN, no COMMIT, no sync for a read");
  syncs.release();
  await w;
});

Deno.test("read() submitted while an operation runs waits for the end of that operation", async () => {
  const db = recorder();
  const q = new WriteQueue(db, () => {});
  let read: Promise<unknown> | undefined;
  await q.submit(async (d) => {
    await d.run("INSERT a");
    read = q.read((x) => x.all("SELECT inside"));
    await d.run("INSERT b");
  });
  await read;
  assert.ok(db.log.indexOf("SELECT inside") > db.log.indexOf("RELEASE op"), db.log.join(", "));
  assert.ok(db.log.indexOf("SELECT inside") > db.log.indexOf("INSERT b"), db.log.join(", "));
});

Deno.test("a sync that fails while the next group runs stops the journal: both groups reject, no second COMMIT", async () => {
  const db = recorder();
  let fail!: (e: Error) => void;
  let stopped: JournalStopped | undefined;
  const q = new WriteQueue(
    db,
    (e) => stopped = e,
    () => Promise.resolve(() => new Promise<void>((_, reject) => fail = reject)),
    1,
  );
  const first = q.submit((d) => d.run("INSERT a"));
  await until(() => fail !== undefined);
  const second = q.submit((d) => d.run("INSERT b"));
  await until(() => db.log.includes("INSERT b"));
  fail(new Error("EIO"));
  await assert.rejects(first, JournalStopped);
  await assert.rejects(second, JournalStopped);
  await assert.rejects(q.submit((d) => d.run("INSERT c")), JournalStopped);
  assert.equal(db.log.filter((s) => s === "COMMIT").length, 1, "b was never committed");
  await tick();
  assert.ok(stopped instanceof JournalStopped);
});

Deno.test("an operation that fails with a storage error stops the journal and rejects its caller", async () => {
  const db = recorder();
  const q = new WriteQueue(db, () => {});
  const bad = q.submit(() => Promise.reject(new Error("disk I/O error")));
  const other = q.submit((d) => d.run("INSERT x"));
  await assert.rejects(bad, JournalStopped);
  await assert.rejects(other, JournalStopped);
  assert.ok(!db.log.includes("COMMIT"), db.log.join(", "));
});

Deno.test("a failed sync stops the journal: the group and every later call reject JournalStopped", async () => {
  const db = recorder();
  let stopped: JournalStopped | undefined;
  const q = new WriteQueue(db, (e) => stopped = e, () => Promise.resolve(() => Promise.reject(new Error("EIO"))));
  await assert.rejects(q.submit((d) => d.run("INSERT a")), JournalStopped);
  await assert.rejects(q.submit((d) => d.run("INSERT b")), JournalStopped);
  await assert.rejects(q.read((d) => d.all("SELECT 1")), JournalStopped);
  await tick();
  assert.ok(stopped instanceof JournalStopped);
  assert.match(stopped.message, /EIO/);
});

Deno.test("a oneWrite operation runs without a savepoint; its refusal rejects only its caller", async () => {
  const db = recorder();
  const q = new WriteQueue(db, () => {});
  const ok = q.submit((d) => d.run("INSERT one"), { oneWrite: true });
  const refused = q.submit(() => Promise.reject(new JournalRefusal("busy", "refused before its write")), {
    oneWrite: true,
  });
  const other = q.submit((d) => d.run("INSERT other"));
  await ok;
  await assert.rejects(refused, JournalRefusal);
  await other;
  assert.deepEqual(db.log, ["BEGIN IMMEDIATE", "INSERT one", "SAVEPOINT op", "INSERT other", "RELEASE op", "COMMIT"]);
});

Deno.test("a caller expected while a group syncs joins the next group even when its call comes after a macrotask", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync);
  const first = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  const waiting = q.submit((d) => d.run("INSERT b"));
  // A delivery whose signature check runs off the event loop: announced now, its call comes after timers fired.
  const release = q.expect();
  syncs.release();
  await first;
  await tick();
  await tick();
  assert.equal(syncs.started, 1, "b's transaction waits for the expected caller instead of committing alone");
  const late = q.submit((d) => d.run("INSERT c"));
  release();
  await until(() => syncs.started === 2);
  syncs.release();
  await Promise.all([waiting, late]);
  assert.equal(q.stats.commits, 2, "b and c shared the second commit");
  assert.equal(q.stats.maxGroup, 2);
});

Deno.test("an expected caller that releases without a call, or twice, leaves the commit to go ahead", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync);
  const first = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  const waiting = q.submit((d) => d.run("INSERT b"));
  const release = q.expect();
  syncs.release();
  await first;
  await tick();
  assert.equal(syncs.started, 1, "held for the expected caller");
  release(); // its command was refused: no call comes
  release();
  await until(() => syncs.started === 2);
  syncs.release();
  await waiting;
  assert.equal(q.stats.commits, 2);
});

Deno.test("a commit waits once, for the callers expected when it could commit, never for ones expected after", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync);
  const first = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  const waiting = q.submit((d) => d.run("INSERT b"));
  const early = q.expect();
  syncs.release();
  await first;
  await tick();
  // A stream of deliveries: each announced while the commit waits; none of them may hold it further.
  const later = q.expect();
  const c = q.submit((d) => d.run("INSERT c"));
  early();
  await until(() => syncs.started === 2);
  assert.equal(db.log.filter((s) => s === "COMMIT").length, 2, "committed with `later` still expected");
  syncs.release();
  await Promise.all([waiting, c]);
  assert.equal(q.stats.maxGroup, 2, "b and c in the second commit");
  const d = q.submit((db) => db.run("INSERT d"));
  later();
  await until(() => syncs.started === 3);
  syncs.release();
  await d;
});

/** Lets every promise job and timer the queue queued run (no real I/O here, so a few timer turns settle it). */
async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await tick();
}

Deno.test("with two syncs allowed, a group commits and starts its sync while the previous group's sync is in flight", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync, 2);
  let aDone = false;
  const a = q.submit((d) => d.run("INSERT a")).then(() => aDone = true);
  await until(() => syncs.started === 1);
  const b = q.submit((d) => d.run("INSERT b"));
  await settle();
  assert.deepEqual(
    db.log.filter((s) => !s.includes("op")),
    ["BEGIN IMMEDIATE", "INSERT a", "COMMIT", "BEGIN IMMEDIATE", "INSERT b", "COMMIT"],
  );
  assert.equal(syncs.started, 2, "b's sync started while a's ran");
  assert.equal(syncs.inFlight, 2);
  assert.equal(aDone, false, "a waits for a sync that started after its COMMIT");
  syncs.release(1);
  await a;
  syncs.release(2);
  await b;
  assert.equal(q.stats.commits, 2);
  assert.equal(q.stats.syncs, 2);
  assert.equal(q.stats.overlapped, 1);
});

type Step =
  | { readonly write: string }
  | { readonly read: string }
  | { readonly release: number };

/**
 * Who is answered when, with syncs in flight. Each row: the steps (a write, a read-only call, the end of sync N) and,
 * after each, the calls answered so far and the syncs started; the queue settles between steps.
 */
const ORDER_ROWS: {
  name: string;
  maxSyncs: number;
  steps: readonly [Step, readonly string[], number][];
}[] = [
  {
    name: "a sync answers its own group",
    maxSyncs: 2,
    steps: [[{ write: "a" }, [], 1], [{ release: 1 }, ["a"], 1]],
  },
  {
    name: "the earlier sync returning first answers only its own group",
    maxSyncs: 2,
    steps: [[{ write: "a" }, [], 1], [{ write: "b" }, [], 2], [{ release: 1 }, ["a"], 2], [
      { release: 2 },
      ["a", "b"],
      2,
    ]],
  },
  {
    name: "the later sync returning first answers its group and the earlier one, committed before it started",
    maxSyncs: 2,
    steps: [[{ write: "a" }, [], 1], [{ write: "b" }, [], 2], [{ release: 2 }, ["a", "b"], 2], [
      { release: 1 },
      ["a", "b"],
      2,
    ]],
  },
  {
    name:
      "a call run while the cap is reached is answered by its own group's sync, not by one started before its COMMIT",
    maxSyncs: 2,
    steps: [
      [{ write: "a" }, [], 1],
      [{ write: "b" }, [], 2],
      [{ write: "c" }, [], 2],
      [{ release: 2 }, ["a", "b"], 3],
      [{ release: 1 }, ["a", "b"], 3],
      [{ release: 3 }, ["a", "b", "c"], 3],
    ],
  },
  {
    name: "a group that wrote nothing is answered only once the groups before it are durable",
    maxSyncs: 2,
    steps: [[{ write: "a" }, [], 1], [{ read: "r" }, [], 1], [{ release: 1 }, ["a", "r"], 1]],
  },
  {
    name: "three syncs in flight: the last one answers all three groups",
    maxSyncs: 3,
    steps: [
      [{ write: "a" }, [], 1],
      [{ write: "b" }, [], 2],
      [{ write: "c" }, [], 3],
      [{ release: 3 }, ["a", "b", "c"], 3],
    ],
  },
  {
    name: "one sync allowed: a call run during a sync commits after it",
    maxSyncs: 1,
    steps: [[{ write: "a" }, [], 1], [{ write: "b" }, [], 1], [{ release: 1 }, ["a"], 2], [
      { release: 2 },
      ["a", "b"],
      2,
    ]],
  },
];

Deno.test("calls are answered in commit order, each only after a sync that started after its COMMIT returned", async (t) => {
  for (const row of ORDER_ROWS) {
    await t.step(row.name, async () => {
      const db = recorder();
      const syncs = heldSyncs();
      let dirty = false;
      const q = new WriteQueue(db, () => {}, () => {
        const wrote = dirty;
        dirty = false;
        return wrote ? syncs.sync() : Promise.resolve(null);
      }, row.maxSyncs);
      const answered: string[] = [];
      const calls: Promise<unknown>[] = [];
      for (const [step, want, started] of row.steps) {
        if ("write" in step) {
          calls.push(
            q.submit((d) => (dirty = true, d.run(`INSERT ${step.write}`))).then(() => answered.push(step.write)),
          );
        } else if ("read" in step) {
          calls.push(q.submit((d) => d.all(`SELECT ${step.read}`)).then(() => answered.push(step.read)));
        } else syncs.release(step.release);
        await settle();
        assert.deepEqual(answered, want, `after ${JSON.stringify(step)}`);
        assert.equal(syncs.started, started, `syncs started after ${JSON.stringify(step)}`);
      }
      await Promise.all(calls);
      assert.equal(q.stats.ops, answered.length);
    });
  }
});

Deno.test("one of two syncs in flight fails: every call not answered rejects, and the other sync answers nobody", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  let stopped: JournalStopped | undefined;
  const q = new WriteQueue(db, (e) => stopped = e, syncs.sync, 2);
  const a = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  const b = q.submit((d) => d.run("INSERT b"));
  await until(() => syncs.started === 2);
  const c = q.submit((d) => d.run("INSERT c"));
  await until(() => db.log.includes("INSERT c"));
  syncs.fail(1, new Error("EIO"));
  await assert.rejects(a, JournalStopped);
  await assert.rejects(b, JournalStopped, "b's own sync had not returned");
  await assert.rejects(c, JournalStopped);
  syncs.release(2);
  await settle();
  assert.equal(q.stats.commits, 0, "the sync that returned after the failure answered nobody");
  await assert.rejects(q.submit((d) => d.run("INSERT d")), JournalStopped);
  assert.equal(db.log.filter((s) => s === "COMMIT").length, 2, "c was never committed");
  assert.ok(stopped instanceof JournalStopped);
  await q.drain();
});

Deno.test("an earlier sync that fails after a later one answered its group stops the journal; what was answered stays", async () => {
  const db = recorder();
  const syncs = heldSyncs();
  const q = new WriteQueue(db, () => {}, syncs.sync, 2);
  const a = q.submit((d) => d.run("INSERT a"));
  await until(() => syncs.started === 1);
  const b = q.submit((d) => d.run("INSERT b"));
  await until(() => syncs.started === 2);
  const c = q.submit((d) => d.run("INSERT c"));
  syncs.release(2);
  await Promise.all([a, b]); // b's sync started after a's COMMIT: both durable
  await until(() => syncs.started === 3);
  syncs.fail(1, new Error("EIO"));
  await assert.rejects(c, JournalStopped, "c's sync had not returned when the journal stopped");
  syncs.release(3);
  await settle();
  assert.equal(q.stats.commits, 2);
  assert.match(q.stopped?.message ?? "", /EIO/);
  await q.drain();
});

Deno.test("WriteQueue refuses a cap of syncs below one", () => {
  assert.throws(() => new WriteQueue(recorder(), () => {}, undefined, 0), RangeError);
});
