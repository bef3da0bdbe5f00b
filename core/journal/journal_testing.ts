/**
 * Test support for the journal's suites: temp data directories, a clock tests move (`fixtures/clock` FakeClock) and a
 * fault-injecting driver.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { openNodeSqlite } from "./driver_node_sqlite.ts";
import { Journal, type JournalOptions } from "./journal.ts";
import type { SqlDriver, SqlDriverFactory, SqlRow, SqlValue, SyncSqlDriver } from "./sql_driver.ts";

/** A fake clock whose wall time starts at `t` (default 2026-11-30T06:00Z) and moves only when the test advances it. */
export function testClock(t = Date.UTC(2026, 10, 30, 6, 0, 0)): FakeClock {
  return new FakeClock(t);
}

/** A fresh temp data directory; removed by the returned disposer. */
export async function tempDataDir(): Promise<{ dir: string } & AsyncDisposable> {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-journal-test-" });
  return { dir, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

/** Opens a journal in `dir` with test defaults (boot "boot-1", the given clock). */
export function openTest(
  dir: string,
  clock: Pick<Clock, "now">,
  extra: Partial<JournalOptions> = {},
): Promise<Journal> {
  return Journal.open({ dataDir: dir, bootId: "boot-1", clock, ...extra });
}

/** Faults a {@link FaultyDriver} can inject. */
export interface Faults {
  /** Throw on the next COMMIT (a failed fsync surfaces there). */
  failCommit?: boolean;
  /** Throw on writes (INSERT/UPDATE/DELETE), as SQLite does for SQLITE_IOERR or SQLITE_FULL. */
  failWrites?: boolean;
  /** Answer `PRAGMA synchronous` with this value. */
  synchronous?: number;
  /** Answer `PRAGMA journal_mode` with this value. */
  journalMode?: string;
}

/**
 * Wraps the real driver and injects {@link Faults}; counts the statements it saw. The faults sit in its synchronous
 * calls, which the write queue uses with `node:sqlite` (production); the async calls go through them too.
 */
export class FaultyDriver implements SqlDriver {
  readonly name = "faulty";
  commits = 0;
  execs: string[] = [];
  /** The SQL of every `all()` call, in order. */
  queries: string[] = [];
  readonly sync: SyncSqlDriver;
  constructor(inner: SqlDriver, readonly faults: Faults) {
    const db = inner.sync;
    if (db === undefined) throw new TypeError(`FaultyDriver wraps a synchronous binding; ${inner.name} is not`);
    this.#inner = inner;
    this.sync = {
      exec: (sql) => {
        this.execs.push(sql);
        if (sql.trim() === "COMMIT") {
          if (this.faults.failCommit) throw new Error("disk I/O error (injected fsync failure)");
          this.commits++;
        }
        db.exec(sql);
      },
      run: (sql, args) => {
        if (this.faults.failWrites) throw new Error("database or disk is full (injected)");
        return db.run(sql, args);
      },
      all: (sql, args) => {
        this.queries.push(sql);
        // A write that returns rows (`UPDATE … RETURNING`) fails like any other write.
        if (this.faults.failWrites && /^\s*(INSERT|UPDATE|DELETE)\b/i.test(sql)) {
          throw new Error("database or disk is full (injected)");
        }
        if (sql === "PRAGMA synchronous" && this.faults.synchronous !== undefined) {
          return [{ synchronous: this.faults.synchronous }];
        }
        if (sql === "PRAGMA journal_mode" && this.faults.journalMode !== undefined) {
          return [{ journal_mode: this.faults.journalMode }];
        }
        return db.all(sql, args);
      },
    };
  }
  readonly #inner: SqlDriver;
  exec(sql: string): Promise<void> {
    return _promised(() => this.sync.exec(sql));
  }
  run(sql: string, args?: readonly SqlValue[]): Promise<number> {
    return _promised(() => this.sync.run(sql, args));
  }
  all(sql: string, args?: readonly SqlValue[]): Promise<SqlRow[]> {
    return _promised(() => this.sync.all(sql, args));
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}

function _promised<T>(f: () => T): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (e) {
    return Promise.reject(e);
  }
}

/** A driver factory that hands out one {@link FaultyDriver} and exposes it. */
export function faultyFactory(faults: Faults): { factory: SqlDriverFactory; driver: () => FaultyDriver } {
  let last: FaultyDriver | null = null;
  return {
    factory: async (path, opts) => (last = new FaultyDriver(await openNodeSqlite(path, opts), faults)),
    driver: () => {
      if (last === null) throw new Error("no driver opened yet");
      return last;
    },
  };
}

/** Text to bytes. */
export function bytes(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}
