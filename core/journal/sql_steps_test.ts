import assert from "node:assert/strict";
import { JournalRefusal } from "./errors.ts";
import { openNodeSqlite } from "./driver_node_sqlite.ts";
import type { SqlDriver, SqlDriverFactory, SqlRow } from "./sql_driver.ts";
import { all, run, runSteps, runStepsSync, type SqlSteps } from "./sql_steps.ts";
import { WriteQueue } from "./write_queue.ts";
import { openTest, tempDataDir, testClock } from "./journal_testing.ts";

/** A synchronous binding that records what runs on it; its async methods fail the test if the queue uses them. */
function syncRecorder(): SqlDriver & { log: string[] } {
  const log: string[] = [];
  const unused = (m: string) => () => Promise.reject(new Error(`the async ${m}() ran; the sync binding was not used`));
  return {
    name: "sync-recorder",
    log,
    exec: unused("exec"),
    run: unused("run"),
    all: unused("all"),
    close: () => Promise.resolve(),
    sync: {
      exec: (sql) => void log.push(sql),
      run: (sql) => (log.push(sql), 1),
      all: (sql) => (log.push(sql), [{ sql }]),
    },
  };
}

function* insert(name: string): SqlSteps<number> {
  return yield* run(`INSERT ${name}`);
}

Deno.test("steps run inline on a synchronous binding: BEGIN to COMMIT of a group in one turn, no async call", async () => {
  const db = syncRecorder();
  const q = new WriteQueue(db, () => {});
  const a = q.submitSteps(() => insert("a"), { oneWrite: true });
  const refused = q.submitSteps(function* (): SqlSteps<number> {
    yield* run("INSERT b");
    throw new JournalRefusal("busy", "refused after its first statement");
  });
  const c = q.submitSteps(function* (): SqlSteps<string> {
    const rows = yield* all("SELECT c");
    return String(rows[0]?.["sql"]);
  });
  // The executor starts in the promise job queued by the first submit; the one turn after it sees the whole group.
  await null;
  assert.deepEqual(db.log, [
    "BEGIN IMMEDIATE",
    "INSERT a",
    "SAVEPOINT op",
    "INSERT b",
    "ROLLBACK TO op; RELEASE op",
    "SAVEPOINT op",
    "SELECT c",
    "RELEASE op",
    "COMMIT",
  ]);
  assert.equal(await a, 1);
  await assert.rejects(refused, JournalRefusal);
  assert.equal(await c, "SELECT c");
});

Deno.test("a failing statement is thrown into the steps (their finally runs) and out to the caller", () => {
  const db = syncRecorder();
  const failing = {
    ...db.sync!,
    run: () => {
      throw new Error("disk I/O error");
    },
  };
  let cleaned = false;
  const steps = function* (): SqlSteps<number> {
    try {
      return yield* run("INSERT x");
    } finally {
      cleaned = true;
    }
  };
  assert.throws(() => runStepsSync(failing, steps()), /disk I\/O error/);
  assert.ok(cleaned);
});

/** The same node:sqlite connection seen as an async-only binding (as `@libsql/client` is): no `sync`. */
const asyncOnly: SqlDriverFactory = async (path, opts) => {
  const db = await openNodeSqlite(path, opts);
  return {
    name: "async-only",
    exec: (sql) => db.exec(sql),
    run: (sql, args) => db.run(sql, args),
    all: (sql, args) => db.all(sql, args),
    close: () => db.close(),
  };
};

Deno.test("the journal's steps give the same entries and refusals on a synchronous and an async binding", async () => {
  const seen: unknown[] = [];
  for (const driver of [openNodeSqlite, asyncOnly]) {
    await using tmp = await tempDataDir();
    const j = await openTest(tmp.dir, testClock(), { driver, incarnation: "inc-1" });
    const input = { kind: "node.reboot", retrySafe: true, selfTerminating: true };
    const out: unknown[] = [];
    out.push(await j.accept("c1", input));
    out.push(await j.markRunning("c1"));
    out.push(await j.finish("c1", { state: "SUCCEEDED", message: "done" }));
    out.push(await j.finish("c1", { state: "FAILED" })); // done keeps its first result
    out.push(await j.get("c1"));
    out.push(await j.resolve("c1", { retrySafe: true, selfTerminating: true }));
    out.push(await j.accept("c1", input).catch((e: Error) => `${e.name}: ${e.message}`));
    out.push(await j.markRunning("nope").catch((e: Error) => `${e.name}: ${e.message}`));
    await j.close();
    seen.push(out);
  }
  assert.deepEqual(seen[1], seen[0]);
  assert.match(String((seen[0] as unknown[])[6]), /already-done|is done/);
});

Deno.test("runSteps awaits each call on an async binding and answers at once on a synchronous one", async () => {
  const rows: SqlRow[] = [{ n: 7 }];
  const asyncDb: SqlDriver = {
    name: "async",
    exec: () => Promise.resolve(),
    run: () => Promise.resolve(3),
    all: () => Promise.resolve(rows),
    close: () => Promise.resolve(),
  };
  const steps = function* (): SqlSteps<number> {
    const changed = yield* run("UPDATE t");
    const r = yield* all("SELECT n");
    return changed + Number(r[0]?.["n"]);
  };
  assert.equal(await runSteps(asyncDb, steps()), 10);
  assert.equal(await runSteps({ ...asyncDb, sync: { exec: () => {}, run: () => 3, all: () => rows } }, steps()), 10);
});
