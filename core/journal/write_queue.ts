/**
 * Group commit with fail-stop, pipelined. Every journal call is an operation submitted here. Operations run at once,
 * one after another, inside the transaction that is open (each under its own savepoint), also while the sync of
 * the group committed before them is in flight; that transaction commits when no sync is in flight, so there is at
 * most one sync at a time and each covers every operation that ran while the last one ran. No operation resolves
 * before its transaction's `COMMIT` and the sync after it (`CommitSync`: the journal's fdatasync of the WAL, off the
 * event loop, see `wal_sync.ts`) returned.
 *
 * Why pipelined: the statements of the next group are the event loop's own work; run while the disk syncs, they cost
 * the group's callers nothing, where running them only after the sync returned put them, and the commit after them,
 * between two syncs on every command's path.
 *
 * The callers a finished group answers often submit their next call at once, through promise jobs alone (a settled
 * command's client delivers its next one): the transaction in progress waits {@link _CONTINUATION_TURNS} promise-job
 * turns before it commits, so those calls join it rather than wait a whole commit and sync for the one after. Promise
 * jobs only: no timer, so a lone caller loses nothing.
 *
 * A caller whose next call comes after work the event loop finishes outside promise jobs (a signature check run off
 * the event loop's thread) says so with {@link WriteQueue.expect} before that work and releases it once its call is
 * submitted or will not come: when the open transaction could commit, it waits for the callers expected at that
 * moment (only those: one expected later never delays it, so a stream of deliveries cannot starve the commit), then
 * gives them the same promise-job turns. An expected caller must release without waiting for any operation of the
 * queue, or the commit it holds would wait for itself.
 *
 * An operation written as steps ({@link WriteQueue.submitSteps}, `sql_steps.ts`) runs inline on a binding that answers
 * on the calling thread (`node:sqlite`): it and the queue's own statements (`BEGIN`, `SAVEPOINT`, `COMMIT`) cost no
 * promise and no promise-job turn each; on an async binding each statement is awaited.
 *
 * {@link WriteQueue.read} runs a read-only look-up at once, between two operations (never inside one), for callers that act on
 * what it sees only where what they see needs no durability (`Journal.resolve`): it may see operations that ran in
 * the open transaction and are not durable yet.
 *
 * A {@link JournalRefusal} (or a TypeError/RangeError from argument checks) thrown by an operation rolls back that
 * operation's savepoint only and rejects its caller. Any other error (a failed write, a failed fsync, an error the
 * journal cannot classify) stops the journal: the open transaction is rolled back, every call not yet answered
 * (including those whose sync was in flight) and every later call rejects with {@link JournalStopped}, and nothing
 * is retried.
 *
 * @module
 */
import { JournalRefusal, JournalStopped } from "./errors.ts";
import type { SqlDriver, SyncSqlDriver } from "./sql_driver.ts";
import { runSteps, runStepsSync, type SqlSteps } from "./sql_steps.ts";

/** One operation: runs inside the group's transaction on the journal's single connection. */
export type Op<T> = (db: SqlDriver) => Promise<T>;

/**
 * Called right after a group's `COMMIT`, before anything else runs on the connection: resolves to the sync that
 * makes that commit durable (run while later operations execute), or null when the group wrote nothing. Its
 * failure, or the sync's, stops the journal like a failed write.
 */
export type CommitSync = () => Promise<(() => Promise<void>) | null>;

/** How an operation runs. */
export interface OpOptions {
  /**
   * The operation changes rows with at most one statement, and refuses (a {@link JournalRefusal}, TypeError or
   * RangeError) only before that statement or by its failure, which SQLite undoes itself (a statement is atomic): a
   * refusal leaves nothing to roll back, so it runs without the savepoint (two statements saved per call).
   */
  readonly oneWrite?: boolean;
}

interface Pending {
  /** An async operation, or null for one written as steps. */
  op: Op<unknown> | null;
  steps: (() => SqlSteps<unknown>) | null;
  oneWrite: boolean;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

interface Ran {
  readonly p: Pending;
  readonly ok: boolean;
  readonly value: unknown;
}

/** Figures for the benchmark and `inspect`. */
export interface QueueStats {
  /** Transactions committed. */
  commits: number;
  /** Operations completed. */
  ops: number;
  /** The largest group committed at once. */
  maxGroup: number;
}

/** The serializing, group-committing queue in front of one connection. */
export class WriteQueue {
  #db: SqlDriver;
  /** Submitted, not run yet. */
  #pending: Pending[] = [];
  /** Run inside the open transaction, not committed yet. */
  #ran: Ran[] = [];
  /** Whether `BEGIN` ran and its `COMMIT` has not. */
  #txOpen = false;
  /** Whether the executor loop is scheduled or running. */
  #running = false;
  /** Whether a committed group's sync is in flight. */
  #syncing = false;
  /** Continuation holds in progress: while one runs, the open transaction does not commit (callers catch up). */
  #holds = 0;
  /** Callers announced by {@link expect} and not released yet. */
  readonly #expected = new Set<object>();
  /** The expected callers the open transaction waits for before it commits (a snapshot), or null. */
  #awaited: Set<object> | null = null;
  /** Whether the open transaction already waited for expected callers (it waits once, then commits). */
  #waited = false;
  /** Whether an operation is between its SAVEPOINT and its RELEASE: reads wait for the end of it. */
  #inOp = false;
  #stopped: JournalStopped | null = null;
  #onStop: (e: JournalStopped) => void;
  #commitSync: CommitSync;
  #readers: Pending[] = [];
  readonly stats: QueueStats = { commits: 0, ops: 0, maxGroup: 0 };

  /** `commitSync` makes a committed group durable; its failure stops the journal like a failed write. */
  constructor(db: SqlDriver, onStop: (e: JournalStopped) => void, commitSync: CommitSync = _nothing) {
    this.#db = db;
    this.#onStop = onStop;
    this.#commitSync = commitSync;
  }

  /** The error that stopped the journal, or null while it runs. */
  get stopped(): JournalStopped | null {
    return this.#stopped;
  }

  /** Queues `op`; resolves with its value once the transaction that ran it is durable. */
  submit<T>(op: Op<T>, opts: OpOptions = {}): Promise<T> {
    return this.#submit(op as Op<unknown>, null, opts) as Promise<T>;
  }

  /**
   * Queues an operation written as steps (`sql_steps.ts`): `steps` is called when its turn comes and run inline on a
   * synchronous binding. Resolves like {@link submit}.
   */
  submitSteps<T>(steps: () => SqlSteps<T>, opts: OpOptions = {}): Promise<T> {
    return this.#submit(null, steps, opts) as Promise<T>;
  }

  #submit(op: Op<unknown> | null, steps: (() => SqlSteps<unknown>) | null, opts: OpOptions): Promise<unknown> {
    if (this.#stopped !== null) return Promise.reject(this.#stopped);
    return new Promise<unknown>((resolve, reject) => {
      this.#pending.push({ op, steps, oneWrite: opts.oneWrite === true, resolve, reject });
      this.#kick();
    });
  }

  /**
   * Runs the read-only `op` at once on the connection, between two operations (after the one in progress, if one
   * is): it sees what the operations run so far wrote, which may not be committed or durable yet, so a caller acts on
   * it only where that is harmless. Never writes; never waits for a sync.
   */
  read<T>(op: Op<T>): Promise<T> {
    if (this.#stopped !== null) return Promise.reject(this.#stopped);
    if (!this.#inOp) return op(this.#db);
    return new Promise<T>((resolve, reject) => {
      this.#readers.push({
        op: op as Op<unknown>,
        steps: null,
        oneWrite: false,
        resolve: resolve as (v: unknown) => void,
        reject,
      });
    });
  }

  /** Waits until every submitted operation is answered (the journal stops submitting before it calls this). */
  async drain(): Promise<void> {
    while (this.#running || this.#syncing || this.#ran.length > 0) await new Promise((r) => setTimeout(r, 1));
  }

  #kick(): void {
    if (this.#running || this.#stopped !== null) return;
    this.#running = true;
    queueMicrotask(() => void this.#execute());
  }

  #runReaders(): void {
    for (const r of this.#readers.splice(0)) {
      if (this.#stopped !== null) r.reject(this.#stopped);
      else r.op!(this.#db).then(r.resolve, r.reject);
    }
  }

  /** The one executor: runs what is pending into the open transaction, and commits it when no sync is in flight. */
  async #execute(): Promise<void> {
    try {
      while (this.#stopped === null) {
        if (this.#pending.length > 0) {
          const s = this.#db.sync;
          if (!this.#txOpen) {
            if (s !== undefined) s.exec("BEGIN IMMEDIATE");
            else await this.#db.exec("BEGIN IMMEDIATE");
            this.#txOpen = true;
          }
          // One at a time, each left pending until it ran: an operation that stops the journal is answered with the
          // rest.
          while (this.#pending.length > 0 && this.#stopped === null) {
            const p = this.#pending[0]!;
            this.#ran.push(
              s !== undefined && p.steps !== null ? this.#runInline(p, p.steps, s) : await this.#runOne(p),
            );
            this.#pending.shift();
          }
          continue;
        }
        if (this.#syncing || this.#holds > 0 || this.#ran.length === 0 || this.#awaited !== null) break;
        if (!this.#waited && this.#expected.size > 0) {
          // Wait once for the callers expected now; their releases re-arm the continuation turns and kick.
          this.#waited = true;
          this.#awaited = new Set(this.#expected);
          break;
        }
        await this.#commit();
      }
    } catch (e) {
      this.#stop(e);
    } finally {
      this.#running = false;
    }
    if (this.#stopped !== null) this.#failAll();
  }

  /** {@link #runOne} for steps on a synchronous binding: no await, so no read runs in between. */
  #runInline(p: Pending, steps: () => SqlSteps<unknown>, s: SyncSqlDriver): Ran {
    if (p.oneWrite) {
      try {
        return { p, ok: true, value: runStepsSync(s, steps()) };
      } catch (e) {
        if (!_opLevel(e)) throw e;
        return { p, ok: false, value: e };
      }
    }
    s.exec("SAVEPOINT op");
    try {
      const value = runStepsSync(s, steps());
      s.exec("RELEASE op");
      return { p, ok: true, value };
    } catch (e) {
      if (!_opLevel(e)) throw e;
      s.exec("ROLLBACK TO op; RELEASE op");
      return { p, ok: false, value: e };
    }
  }

  async #runOne(p: Pending): Promise<Ran> {
    this.#inOp = true;
    const op: Op<unknown> = p.op ?? ((db) => runSteps(db, p.steps!()));
    try {
      if (p.oneWrite) {
        try {
          return { p, ok: true, value: await op(this.#db) };
        } catch (e) {
          if (!_opLevel(e)) throw e;
          return { p, ok: false, value: e };
        }
      }
      await this.#db.exec("SAVEPOINT op");
      try {
        const value = await op(this.#db);
        await this.#db.exec("RELEASE op");
        return { p, ok: true, value };
      } catch (e) {
        if (!_opLevel(e)) throw e;
        await this.#db.exec("ROLLBACK TO op; RELEASE op");
        return { p, ok: false, value: e };
      }
    } finally {
      this.#inOp = false;
      this.#runReaders();
    }
  }

  /** Commits the open transaction and starts its sync; the group is answered when the sync returns. */
  async #commit(): Promise<void> {
    const s = this.#db.sync;
    if (s !== undefined) s.exec("COMMIT");
    else await this.#db.exec("COMMIT");
    this.#txOpen = false;
    this.#waited = false;
    const sync = await this.#commitSync();
    // Only the executor adds to #ran, and it is here: the group is exactly what this COMMIT committed. A failed COMMIT
    // or commitSync leaves it in #ran, rejected with the rest.
    const group = this.#ran;
    this.#ran = [];
    this.#syncing = true;
    void this.#finish(group, sync);
  }

  async #finish(group: Ran[], sync: (() => Promise<void>) | null): Promise<void> {
    try {
      if (sync !== null) await sync();
    } catch (e) {
      this.#syncing = false;
      for (const r of group) r.p.reject(this.#stop(e));
      if (!this.#running) this.#failAll();
      return;
    }
    this.#syncing = false;
    if (this.#stopped !== null) {
      // Stopped while this sync ran: its callers get the same answer as every other call not yet answered.
      for (const r of group) r.p.reject(this.#stopped);
      return;
    }
    this.stats.commits++;
    this.stats.ops += group.length;
    this.stats.maxGroup = Math.max(this.stats.maxGroup, group.length);
    this.#holds++;
    for (const r of group) {
      if (r.ok) r.p.resolve(r.value);
      else r.p.reject(r.value);
    }
    // Let the callers just answered submit their next calls (they run at once) before the open transaction commits.
    await this.#continuation();
  }

  /** Holds the commit for {@link _CONTINUATION_TURNS} promise-job turns (`#holds` already counts it), then kicks. */
  async #continuation(): Promise<void> {
    for (let i = 0; i < _CONTINUATION_TURNS; i++) await null;
    this.#holds--;
    if (this.#ran.length > 0 || this.#pending.length > 0) this.#kick();
  }

  /**
   * Announces a caller that will submit a call after work outside promise jobs (see the module doc); returns its
   * release, idempotent, to call once the call is submitted or will not come, without waiting for the queue first.
   */
  expect(): () => void {
    const token = {};
    this.#expected.add(token);
    return () => {
      if (!this.#expected.delete(token)) return;
      if (this.#awaited?.delete(token) !== true || this.#awaited.size > 0) return;
      this.#awaited = null;
      this.#holds++;
      void this.#continuation();
    };
  }

  /**
   * Rejects every call not answered yet (the journal is stopped). The open transaction is left as it is: `onStop`
   * closes the connection, which rolls it back, and nothing of it was ever reported.
   */
  #failAll(): void {
    const stopped = this.#stopped!;
    for (const r of this.#ran.splice(0)) r.p.reject(stopped);
    for (const p of this.#pending.splice(0)) p.reject(stopped);
    this.#runReaders();
  }

  #stop(cause: unknown): JournalStopped {
    if (this.#stopped !== null) return this.#stopped;
    const msg = cause instanceof Error ? cause.message : String(cause);
    this.#stopped = new JournalStopped(
      `journal write failed (${msg}); the journal stopped (fail-stop) and refuses every further call`,
      { cause },
    );
    const stopped = this.#stopped;
    // Outside the queue's own flow: a throwing callback must not leave callers of this group unanswered.
    queueMicrotask(() => this.#onStop(stopped));
    return stopped;
  }
}

/** How many promise-job turns a finished group leaves its callers before the open transaction commits. */
const _CONTINUATION_TURNS = 64;

function _nothing(): Promise<null> {
  return Promise.resolve(null);
}

/** Errors that concern one operation's request, not the storage: they roll back that operation only. */
function _opLevel(e: unknown): boolean {
  return e instanceof JournalRefusal || e instanceof TypeError || e instanceof RangeError;
}
