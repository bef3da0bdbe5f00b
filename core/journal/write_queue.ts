/**
 * Group commit with fail-stop, pipelined, with overlapping syncs. Every journal call is an operation submitted here.
 * Operations run at once, one after another, inside the transaction that is open (each under its own savepoint), also
 * while the syncs of groups committed before them are in flight; that transaction commits, and starts its own sync,
 * while fewer than {@link MAX_SYNCS_IN_FLIGHT} syncs are in flight, so a call that arrives while a sync runs waits for
 * one sync (its own group's), not for the rest of the one in progress and then its own. No operation resolves before
 * its transaction's `COMMIT` and a sync that started after that `COMMIT` returned (`CommitSync`: the journal's
 * fdatasync of the WAL, off the event loop, see `wal_sync.ts`).
 *
 * Why overlapping syncs are sound: fdatasync makes durable everything written to the file before the call, whatever
 * other fdatasyncs of the file run beside it. So when the sync of group K+1 returns, every group committed before it
 * started is durable too: groups are answered in commit order, and a sync that returns answers its own group and
 * every earlier one not answered yet (group K's callers need not wait for sync K when sync K+1 returned first). A group
 * whose commit wrote nothing (no sync of its own) is answered once every earlier group is: what it read was written by
 * them.
 *
 * A sync that fails after a later one succeeded (fsyncgate: after a failed writeback the kernel may drop the dirty
 * pages, and reports the error once per open file description, to the first fsync that checks): the journal stops as
 * for any failed sync, and every caller not answered yet rejects, those of every other sync in flight included; nothing
 * resolves after it. The callers the later sync already answered were durable: each sync in flight uses a file
 * description of its own, opened with the journal (`WalSync`), so a writeback error of the WAL is reported to every
 * one of them at its next check, never consumed by a concurrent sync on a shared one. The later sync's success then
 * says that no writeback error was recorded before its check, and it waited for the writeback of every page dirty when
 * it started, whoever had started writing them, so every frame committed before it started was on disk; the error the
 * earlier sync reports was recorded after that check, on a page written later. (On one shared description, the
 * earlier sync could have taken the error and the later one returned success over lost frames.)
 *
 * Checkpoints and WAL restarts while syncs are in flight (`synchronous=NORMAL`): SQLite checkpoints inside a `COMMIT`,
 * on the event loop, syncing the WAL before it copies frames into the database and the database after; it restarts
 * the WAL (new salt, frames written again from its start) only at a later write, and only after a checkpoint that
 * copied every frame and synced the database. So when a restart overwrites the frames of a group whose sync is still
 * in flight, that group's changes are already durable in the database, synced before the `COMMIT` that checkpointed
 * returned; and a frame written after the restart is covered only by syncs started after its `COMMIT`, as any other.
 * Nothing waits for the syncs in flight around a checkpoint.
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
 * queue, or the commit it holds would wait for itself. Both hold the commit whether or not a sync could start: a commit
 * for each straggler would split the groups, and each sync costs the event loop its hand-off and wake-up (the figures
 * are at {@link MAX_SYNCS_IN_FLIGHT}).
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
 * (including those of every sync in flight) and every later call rejects with {@link JournalStopped}, and nothing is
 * retried; a sync in flight that returns after that answers nobody.
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

/** A committed group whose callers are not answered yet. */
interface Committed {
  readonly ran: Ran[];
  /** Whether a sync that started after this group's `COMMIT` returned (its own or a later group's). */
  durable: boolean;
}

/** Figures for the benchmark and `inspect`. */
export interface QueueStats {
  /** Transactions committed and answered (durable). */
  commits: number;
  /** Operations completed. */
  ops: number;
  /** The largest group committed at once. */
  maxGroup: number;
  /** WAL syncs started (a commit that wrote nothing starts none). */
  syncs: number;
  /** Syncs started while another was in flight. */
  overlapped: number;
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
  /** Committed groups not answered yet, in commit order. */
  #committed: Committed[] = [];
  /** Syncs started and not returned yet. */
  #syncsInFlight = 0;
  readonly #maxSyncs: number;
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
  readonly stats: QueueStats = { commits: 0, ops: 0, maxGroup: 0, syncs: 0, overlapped: 0 };

  /**
   * `commitSync` makes a committed group durable; its failure stops the journal like a failed write. At most
   * `maxSyncs` of them run at once (1: a group commits only when no sync is in flight).
   */
  constructor(
    db: SqlDriver,
    onStop: (e: JournalStopped) => void,
    commitSync: CommitSync = _nothing,
    maxSyncs: number = MAX_SYNCS_IN_FLIGHT,
  ) {
    if (!Number.isSafeInteger(maxSyncs) || maxSyncs < 1) {
      throw new RangeError(`maxSyncs is ${maxSyncs}; at least one sync must be able to run`);
    }
    this.#db = db;
    this.#onStop = onStop;
    this.#commitSync = commitSync;
    this.#maxSyncs = maxSyncs;
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
    while (this.#running || this.#syncsInFlight > 0 || this.#committed.length > 0 || this.#ran.length > 0) {
      await new Promise((r) => setTimeout(r, 1));
    }
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

  /** The one executor: runs what is pending into the open transaction, and commits it while a sync may start. */
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
        if (
          this.#syncsInFlight >= this.#maxSyncs || this.#holds > 0 || this.#ran.length === 0 || this.#awaited !== null
        ) break;
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

  /** Commits the open transaction and starts its sync; the group is answered once a sync started after it returned. */
  async #commit(): Promise<void> {
    const s = this.#db.sync;
    if (s !== undefined) s.exec("COMMIT");
    else await this.#db.exec("COMMIT");
    this.#txOpen = false;
    this.#waited = false;
    const sync = await this.#commitSync();
    // Only the executor adds to #ran, and it is here: the group is exactly what this COMMIT committed. A failed COMMIT
    // or commitSync leaves it in #ran, rejected with the rest.
    const group: Committed = { ran: this.#ran, durable: sync === null };
    this.#ran = [];
    this.#committed.push(group);
    if (sync === null) {
      // Nothing to sync: durable once every earlier group is, which may be now.
      this.#answerDurable();
      return;
    }
    if (this.#syncsInFlight > 0) this.stats.overlapped++;
    this.#syncsInFlight++;
    this.stats.syncs++;
    void this.#finish(group, sync);
  }

  async #finish(group: Committed, sync: () => Promise<void>): Promise<void> {
    try {
      await sync();
    } catch (e) {
      this.#syncsInFlight--;
      this.#stop(e);
      this.#failCommitted();
      if (!this.#running) this.#failAll();
      return;
    }
    this.#syncsInFlight--;
    // Stopped while this sync ran: its callers were answered with every other call not yet answered.
    if (this.#stopped !== null) return;
    // This sync started after the COMMIT of its group and of every group before it: all of them are durable now
    // (none, when a later sync that returned first answered them already).
    const last = this.#committed.indexOf(group);
    for (let i = 0; i <= last; i++) this.#committed[i]!.durable = true;
    if (!this.#answerDurable() && (this.#ran.length > 0 || this.#pending.length > 0)) this.#kick();
  }

  /**
   * Answers the committed groups that are durable, in commit order, and holds the open transaction for their callers'
   * next calls (see {@link #continuation}); false when none was.
   */
  #answerDurable(): boolean {
    let answered = false;
    while (this.#committed[0]?.durable === true) {
      const group = this.#committed.shift()!.ran;
      this.stats.commits++;
      this.stats.ops += group.length;
      this.stats.maxGroup = Math.max(this.stats.maxGroup, group.length);
      for (const r of group) {
        if (r.ok) r.p.resolve(r.value);
        else r.p.reject(r.value);
      }
      answered = true;
    }
    if (answered) {
      // Let the callers just answered submit their next calls (they run at once) before the open transaction commits.
      this.#holds++;
      void this.#continuation();
    }
    return answered;
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
    this.#failCommitted();
    for (const r of this.#ran.splice(0)) r.p.reject(stopped);
    for (const p of this.#pending.splice(0)) p.reject(stopped);
    this.#runReaders();
  }

  /** Rejects the callers of every committed group not answered yet, whatever its sync (the journal is stopped). */
  #failCommitted(): void {
    const stopped = this.#stopped!;
    for (const c of this.#committed.splice(0)) for (const r of c.ran) r.p.reject(stopped);
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

/**
 * How many syncs of committed groups may be in flight at once: the open transaction commits and starts its own sync
 * while fewer run (each on a WAL file description of its own, so also how many `WalSync` opens).
 *
 * Measured (2026-12-02, a shared 2-core VM under load 9-13, `bench:commands-ab` against the one-sync-at-a-time base
 * in one process): a lone accept arriving while another group's sync is in flight waits 0.53x as long with 2 (one sync,
 * its own, instead of the rest of the one in flight and then its own). With 8 closed-loop clients the groups stay
 * together (the commit waits for the expected callers and the continuation turns, as before): 2 and 3 both start
 * about 1% of syncs overlapped and are within the noise of 1 (wall per command 0.80-1.22x, ACKED 0.89-1.07x, cap 1
 * measured 0.84-1.15x against the same code). Committing at once without waiting for expected callers (groups of
 * 3.4 calls instead of 7.8, 80% of syncs overlapped) cost 1.4-1.9x the event loop's CPU per command and 2.4-3x the
 * ACKED p50; so the callers expected still hold the commit. Measured again with the WAL in place (its steady state,
 * later the same day, load 1.7-2.9): committing without waiting while at least as many calls ran as callers are
 * expected (two cohorts of ~4 that could alternate) cost 1.21x the loop CPU per command on the direct path, 1.36x
 * through the session, 1.10-1.34x the wall per command and 1.43x the ACKED p50. What a sync costs the loop is mostly
 * the loop's idling while it runs, not the hand-off: a WAL-sized fdatasync round trip charged the loop 60-150 µs when
 * it idled meanwhile (Deno's `syncData` and a worker thread woken through `Atomics.waitAsync` alike: 99 and 62 µs at
 * load 1, 139 and 139 at load 4) and nothing measurable when it ran 3 ms of other work meanwhile; this VM charges any
 * idle wait (a 2 ms `setTimeout` 190-240 µs of the loop's CPU, a 2 ms sleep in python 34-45 µs). Beyond two,
 * concurrent fdatasyncs of one file gained nothing more on this disk (python threads, 4 KiB each: 2 at once
 * 1.25-1.3x the serial rate, 4 at once 1.0-1.4x): 2.
 */
export const MAX_SYNCS_IN_FLIGHT = 2;

/** How many promise-job turns a finished group leaves its callers before the open transaction commits. */
const _CONTINUATION_TURNS = 64;

function _nothing(): Promise<null> {
  return Promise.resolve(null);
}

/** Errors that concern one operation's request, not the storage: they roll back that operation only. */
function _opLevel(e: unknown): boolean {
  return e instanceof JournalRefusal || e instanceof TypeError || e instanceof RangeError;
}
