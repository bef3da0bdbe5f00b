/**
 * Group commit with fail-stop. Every journal call is an operation submitted here; operations submitted while a
 * commit is in flight (or in the same tick, or by the callers the last group answered, through promise jobs alone,
 * before the next group is taken) run together in one transaction, each under its own savepoint, and
 * none of them resolves before the transaction's `COMMIT` and the sync after it (`afterCommit`: the journal's
 * fdatasync of the WAL, off the event loop, see `wal_sync.ts`) returned. While that sync runs, the event loop runs
 * and new operations gather into the next group.
 *
 * {@link WriteQueue.read} runs a read-only look-up at once, outside any group (between two groups' transactions),
 * for callers that act on what is committed only where what they see needs no durability (`Journal.resolve`).
 *
 * A {@link JournalRefusal} (or a TypeError/RangeError from argument checks) thrown by an operation rolls back that
 * operation's savepoint only and rejects its caller. Any other error
 * (a failed write, a failed fsync, an error the journal cannot classify) stops the journal: the transaction is
 * abandoned, every queued and later call rejects with {@link JournalStopped}, and nothing is retried.
 *
 * @module
 */
import { JournalRefusal, JournalStopped } from "./errors.ts";
import type { SqlDriver } from "./sql_driver.ts";

/** One operation: runs inside the group's transaction on the journal's single connection. */
export type Op<T> = (db: SqlDriver) => Promise<T>;

interface Pending {
  op: Op<unknown>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
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
  #pending: Pending[] = [];
  #running = false;
  #stopped: JournalStopped | null = null;
  #onStop: (e: JournalStopped) => void;
  #afterCommit: () => Promise<void>;
  /** Between a group's BEGIN and its COMMIT (or rollback): reads wait for the end of it. */
  #inTx = false;
  #readers: Pending[] = [];
  readonly stats: QueueStats = { commits: 0, ops: 0, maxGroup: 0 };

  /** `afterCommit` makes a committed group durable; its failure stops the journal like a failed write. */
  constructor(db: SqlDriver, onStop: (e: JournalStopped) => void, afterCommit: () => Promise<void> = _nothing) {
    this.#db = db;
    this.#onStop = onStop;
    this.#afterCommit = afterCommit;
  }

  /** The error that stopped the journal, or null while it runs. */
  get stopped(): JournalStopped | null {
    return this.#stopped;
  }

  /** Queues `op`; resolves with its value once the transaction that ran it is durable. */
  submit<T>(op: Op<T>): Promise<T> {
    if (this.#stopped !== null) return Promise.reject(this.#stopped);
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ op: op as Op<unknown>, resolve: resolve as (v: unknown) => void, reject });
      if (!this.#running) {
        this.#running = true;
        queueMicrotask(() => void this.#drain());
      }
    });
  }

  /**
   * Runs the read-only `op` at once on the connection, outside any group (after the transaction in progress, if
   * one is): it sees what is committed, which may not be durable yet, so a caller acts on it only where that is
   * harmless. Never writes; never waits for a sync.
   */
  read<T>(op: Op<T>): Promise<T> {
    if (this.#stopped !== null) return Promise.reject(this.#stopped);
    if (!this.#inTx) return op(this.#db);
    return new Promise<T>((resolve, reject) => {
      this.#readers.push({ op: op as Op<unknown>, resolve: resolve as (v: unknown) => void, reject });
    });
  }

  #runReaders(): void {
    for (const r of this.#readers.splice(0)) {
      if (this.#stopped !== null) r.reject(this.#stopped);
      else r.op(this.#db).then(r.resolve, r.reject);
    }
  }

  /** Waits until every queued operation has run (the journal stops submitting before it calls this). */
  async drain(): Promise<void> {
    while (this.#running) await new Promise((r) => setTimeout(r, 1));
  }

  async #drain(): Promise<void> {
    try {
      while (this.#pending.length > 0 && this.#stopped === null) {
        const group = this.#pending;
        this.#pending = [];
        await this.#runGroup(group);
        // The callers this group just answered often submit their next call at once, through promise jobs alone (a
        // settled command's client delivers its next one). Let those jobs run before the next group is taken, so
        // their calls join it rather than wait a whole commit and fsync for the one after. Promise jobs only: no
        // timer, so a lone caller loses nothing.
        for (let i = 0; i < _CONTINUATION_TURNS; i++) await null;
      }
    } finally {
      this.#running = false;
    }
    for (const p of this.#pending.splice(0)) p.reject(this.#stopped);
  }

  async #runGroup(group: Pending[]): Promise<void> {
    const outcomes: { ok: boolean; value: unknown }[] = [];
    try {
      this.#inTx = true;
      await this.#db.exec("BEGIN IMMEDIATE");
      for (const p of group) {
        await this.#db.exec("SAVEPOINT op");
        try {
          const value = await p.op(this.#db);
          await this.#db.exec("RELEASE op");
          outcomes.push({ ok: true, value });
        } catch (e) {
          if (!_opLevel(e)) throw e;
          await this.#db.exec("ROLLBACK TO op; RELEASE op");
          outcomes.push({ ok: false, value: e });
        }
      }
      await this.#db.exec("COMMIT");
      this.#inTx = false;
      this.#runReaders();
      await this.#afterCommit();
    } catch (e) {
      this.#inTx = false;
      this.#stop(e);
      this.#runReaders();
      for (const p of group) p.reject(this.#stopped);
      for (const p of this.#pending.splice(0)) p.reject(this.#stopped);
      return;
    }
    this.stats.commits++;
    this.stats.ops += group.length;
    this.stats.maxGroup = Math.max(this.stats.maxGroup, group.length);
    group.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.value);
      else p.reject(o.value);
    });
  }

  #stop(cause: unknown): void {
    const msg = cause instanceof Error ? cause.message : String(cause);
    this.#stopped = new JournalStopped(
      `journal write failed (${msg}); the journal stopped (fail-stop) and refuses every further call`,
      { cause },
    );
    const stopped = this.#stopped;
    // Outside the queue's own flow: a throwing callback must not leave callers of this group unanswered.
    queueMicrotask(() => this.#onStop(stopped));
  }
}

/** How many promise-job turns a finished group leaves its callers before the next group is taken. */
const _CONTINUATION_TURNS = 64;

function _nothing(): Promise<void> {
  return Promise.resolve();
}

/** Errors that concern one operation's request, not the storage: they roll back that operation only. */
function _opLevel(e: unknown): boolean {
  return e instanceof JournalRefusal || e instanceof TypeError || e instanceof RangeError;
}
