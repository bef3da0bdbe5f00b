/**
 * The {@link Journal}: one process's handle on `data_dir/journal.db`. Every method is one operation through the
 * group-committing {@link WriteQueue}; its promise resolves only after the transaction that ran it is durable.
 *
 * @module
 */
import { type Clock, realClock } from "../clock.ts";
import { DEFAULT_BOUNDS, type JournalBounds } from "./bounds.ts";
import {
  acceptSteps,
  ackResultsOp,
  cancelOp,
  expireOp,
  finishSteps,
  markRunningSteps,
  rejectOp,
  settleOp,
  unackedResultsOp,
} from "./commands.ts";
import { openNodeSqlite } from "./driver_node_sqlite.ts";
import { readEntry, readEntrySteps } from "./entry_row.ts";
import { JournalBusy, JournalError, type JournalStopped } from "./errors.ts";
import {
  ackEventsUpTo,
  type AllocationAnnouncement,
  announcedAllocations,
  appendEvent,
  type AppendOutcome,
  type EventTotals,
  eventTotals,
  eventTotalsSteps,
  isFull,
  listEvents,
} from "./events.ts";
import { MAX_EXEC_TICKETS, useTicket } from "./exec_tickets.ts";
import { updateIdentity } from "./identity_file.ts";
import type { DataDirLock } from "./lock.ts";
import { getMeta, setMeta } from "./meta.ts";
import { _NO_LOG, type JournalLogger, type OpenReport, openStore } from "./open.ts";
import { recoverOp, type RecoverReport } from "./recover.ts";
import { type Resolution, type ResolveContext, resolveEntry } from "./resolve.ts";
import type { SqlDriver, SqlDriverFactory } from "./sql_driver.ts";
import { sweepOp, type SweepReport } from "./sweep.ts";
import { boundedString } from "../log/bounded_text.ts";
import { advanceMark, MARK_PERSIST_STEP_MS, type ServerTimeSource } from "./time_mark.ts";
import type {
  AcceptedEntry,
  AcceptInput,
  DoneEntry,
  EventClass,
  JournalEntry,
  JournalEvent,
  JournalMeta,
  OutcomeInput,
  RejectReason,
  ResolveFlags,
  RunningEntry,
  StoredSpec,
} from "./types.ts";
import { colBytesOrNull, colNum, colStr } from "./sql_driver.ts";
import { type OpOptions, type QueueStats, WriteQueue } from "./write_queue.ts";
import type { SqlSteps } from "./sql_steps.ts";
import type { WalSync, WalSyncStats } from "./wal_sync.ts";

export { JOURNAL_FILE, type JournalLogger, type OpenReport } from "./open.ts";

/** How {@link Journal.open} finds and creates the journal. */
export interface JournalOptions {
  /** The agent's `data_dir`; created (mode 0700) when absent. */
  readonly dataDir: string;
  /** The current boot (`readBootId()`); injected so tests and the crash campaign can simulate reboots. */
  readonly bootId: string;
  /** This process start's incarnation id; a fresh UUID by default. */
  readonly incarnation?: string;
  /** The clock whose wall time stamps entries and events (default the real clock). */
  readonly clock?: Pick<Clock, "now">;
  /** From `boundsFromConfig(resolved.journal)`; the defaults otherwise. */
  readonly bounds?: JournalBounds;
  readonly logger?: JournalLogger;
  /** The storage binding; `node:sqlite` by default. */
  readonly driver?: SqlDriverFactory;
  /** The node id written into a new journal's meta. */
  readonly nodeId?: string | null;
  /** The exec-ticket cap; 10,000 by default (tests lower it). */
  readonly maxExecTickets?: number;
  /** Called once when a write fails and the journal stops (the daemon exits). */
  readonly onStop?: (e: JournalStopped) => void;
}

/** The journal of one data directory, held by one process. */
export class Journal {
  readonly dataDir: string;
  readonly incarnation: string;
  readonly bootId: string;
  readonly journalId: string;
  readonly bounds: JournalBounds;
  readonly opened: OpenReport;
  readonly #db: SqlDriver;
  readonly #wal: WalSync;
  /** `total_changes()` when the last WAL sync started (what the open synced counts as synced). */
  #syncedChanges = -1;
  readonly #queue: WriteQueue;
  readonly #lock: DataDirLock;
  readonly #clock: Pick<Clock, "now">;
  readonly #log: JournalLogger;
  readonly #maxTickets: number;
  #closed = false;
  /** The server time mark as seen (ahead of the written one by less than the step). */
  #mark: number | undefined;
  #markWritten: number | undefined;
  #markWrite: Promise<void> | undefined;
  /**
   * Whether unacked transitions and results reach a bound (`accept` answers BUSY), as the backlog stood after the
   * last operation that read or changed it; undefined: read it again. Only `appendEvent` and `ackEvents` change the
   * backlog, and each forgets this inside its own operation (so a rolled-back one is forgotten too): an `accept`
   * reads the backlog only after one of them ran, not once per command.
   */
  #full: boolean | undefined;

  private constructor(
    init: {
      opts: JournalOptions;
      db: SqlDriver;
      lock: DataDirLock;
      incarnation: string;
      journalId: string;
      opened: OpenReport;
      wal: WalSync;
      clock: Pick<Clock, "now">;
      log: JournalLogger;
    },
  ) {
    this.dataDir = init.opts.dataDir;
    this.incarnation = init.incarnation;
    this.bootId = init.opts.bootId;
    this.journalId = init.journalId;
    this.bounds = init.opts.bounds ?? DEFAULT_BOUNDS;
    this.opened = init.opened;
    this.#db = init.db;
    this.#wal = init.wal;
    this.#lock = init.lock;
    this.#clock = init.clock;
    this.#log = init.log;
    this.#maxTickets = init.opts.maxExecTickets ?? MAX_EXEC_TICKETS;
    const onStop = init.opts.onStop;
    this.#queue = new WriteQueue(init.db, (e) => {
      this.#log.fatal(
        { err: e.cause, journal_id: this.journalId },
        "journal write failed; journal stopped (fail-stop)",
      );
      void this.#db.close().catch((c) =>
        this.#log.warn({ err: c, journal_id: this.journalId }, "closing the stopped journal failed")
      );
      this.#wal.close();
      onStop?.(e);
    }, () => this.#commitSync());
  }

  /**
   * Right after a group's COMMIT: the fdatasync of the WAL when the group changed a row. Every journal write is an
   * INSERT, UPDATE or DELETE, which `total_changes()` counts (triggers included); a group that only read wrote no WAL
   * frame, and costs no fsync (as with `synchronous=FULL`, where a read-only commit synced nothing): the sync that
   * started last covers what it read, and the queue answers it after the groups before it. The count is read here,
   * before the next group's operations run on the connection; the sync runs while they do.
   */
  async #commitSync(): Promise<(() => Promise<void>) | null> {
    const row = (await this.#db.all("SELECT total_changes() AS n"))[0];
    const changes = row === undefined ? NaN : colNum(row, "n");
    if (changes === this.#syncedChanges) return null;
    // Counted as synced once the sync starts: a later group with no change of its own is covered by it, and a sync
    // that fails stops the journal.
    this.#syncedChanges = changes;
    return () => this.#wal.sync();
  }

  /**
   * Opens (or creates) the journal of `opts.dataDir`: takes the one-writer lock, verifies WAL +
   * `synchronous=NORMAL` (the journal syncs the WAL itself), checks integrity, quarantines a damaged journal and starts a new `journal_id` (logged at
   * error level), and restores the server time mark from the identity.json mirror. Call {@link recover} next.
   */
  static async open(opts: JournalOptions): Promise<Journal> {
    const clock = opts.clock ?? realClock;
    const log = opts.logger ?? _NO_LOG;
    const incarnation = opts.incarnation ?? crypto.randomUUID();
    const s = await openStore({
      dataDir: opts.dataDir,
      incarnation,
      clock,
      log,
      driver: opts.driver ?? openNodeSqlite,
      nodeId: opts.nodeId ?? null,
    });
    return new Journal({ opts, ...s, incarnation, clock, log });
  }

  #ctx(): ResolveContext {
    return { incarnation: this.incarnation, bootId: this.bootId };
  }

  /** Submits `fn`; `opts.oneWrite` only for an operation that keeps {@link OpOptions.oneWrite}'s promise. */
  #op<T>(fn: (db: SqlDriver, now: number) => Promise<T>, opts?: OpOptions): Promise<T> {
    if (this.#closed) return Promise.reject(new JournalError("journal-closed", "the journal is closed"));
    return this.#queue.submit((db) => fn(db, this.#clock.now()), opts);
  }

  /** {@link #op} for an operation written as steps (`sql_steps.ts`): inline on `node:sqlite`. */
  #steps<T>(fn: (now: number) => SqlSteps<T>, opts?: OpOptions): Promise<T> {
    if (this.#closed) return Promise.reject(new JournalError("journal-closed", "the journal is closed"));
    return this.#queue.submitSteps(() => fn(this.#clock.now()), opts);
  }

  /**
   * Announces a call that will come after work off the event loop's thread (a signature check): the next group
   * commit waits for it once (see `write_queue.ts`). Call the returned release, idempotent, once the call is
   * submitted or will not come, and never wait for a journal call while holding it.
   */
  expectWrite(): () => void {
    return this.#queue.expect();
  }

  /** The error that stopped the journal (fail-stop), or null. */
  get stopped(): JournalStopped | null {
    return this.#queue.stopped;
  }

  /** Group-commit figures. */
  get stats(): Readonly<QueueStats> {
    return this.#queue.stats;
  }

  /** The WAL syncs, and those that found the WAL grown since the previous one (`wal_sync.ts`). */
  get walStats(): Readonly<WalSyncStats> {
    return this.#wal.stats;
  }

  // ---- commands -------------------------------------------------------------------------------------------------

  /**
   * Resolves a delivered command against its entry (the seed's six rows, see resolve.ts). The `rebooted` and
   * `interrupted` rows are settled durably before this returns; their `result` is what to report.
   */
  async resolve(commandId: string, flags: ResolveFlags): Promise<Resolution> {
    if (this.#closed) throw new JournalError("journal-closed", "the journal is closed");
    // The common case, a command never seen, is answered from a read outside the queue: it waits for no group and
    // no fsync. Acting on "no entry" needs no durability (accept checks the entry again inside its own group).
    // Any entry is resolved again inside the queue, where what the row says is durable before it is acted on.
    const seen = await this.#queue.read((db) => readEntry(db, commandId));
    if (seen === null) return resolveEntry(null, flags, this.#ctx());
    return await this.#op(async (db, now) => {
      const r = resolveEntry(await readEntry(db, commandId), flags, this.#ctx());
      if (r.action === "rebooted" || r.action === "interrupted") await settleOp(db, commandId, r.result, now);
      return r;
    });
  }

  /**
   * Journals `accepted` (durable before it returns, so before any side effect). Throws {@link JournalBusy} when
   * the journal is full (nothing written), `CommandStateError` for an id that is done or in flight here.
   */
  accept(commandId: string, input: AcceptInput): Promise<AcceptedEntry> {
    return this.#steps((now) => this.#accept(commandId, input, now), _ONE_WRITE);
  }

  *#accept(commandId: string, input: AcceptInput, now: number): SqlSteps<AcceptedEntry> {
    this.#full ??= isFull(yield* eventTotalsSteps(), this.bounds);
    if (this.#full) {
      throw new JournalBusy(`the journal is full; command ${commandId} refused BUSY until acks drain the backlog`);
    }
    return yield* acceptSteps(commandId, input, this.#ctx(), now);
  }

  /** Journals `running{boot_id}`: for a self-terminating kind, immediately before its side effect. */
  markRunning(commandId: string): Promise<RunningEntry> {
    return this.#steps((now) => markRunningSteps(commandId, this.#ctx(), now), _ONE_WRITE);
  }

  /** Journals the terminal result (stamped with this boot). A command already done keeps its first result. */
  finish(commandId: string, outcome: OutcomeInput): Promise<DoneEntry> {
    if (outcome.state === "REJECTED") return Promise.reject(new TypeError("use reject() for a REJECTED outcome"));
    const o = outcome.message === undefined ? outcome : { ...outcome, message: _message(outcome.message) };
    return this.#steps((now) => finishSteps(commandId, o, this.#ctx(), now), _ONE_WRITE);
  }

  /**
   * Journals `CANCELLED` for a command whose side effect has not started: still queued here, deferred before
   * acceptance (no entry yet), or left by an earlier process awaiting redelivery. A done command keeps its result
   * (a real outcome wins over a late cancel); a running one refuses with `CommandStateError` reason `running`.
   */
  cancel(commandId: string, input: AcceptInput, message?: string): Promise<DoneEntry> {
    const m = message === undefined ? undefined : _message(message);
    return this.#op((db, now) => cancelOp(db, commandId, input, m, this.#ctx(), now));
  }

  /**
   * Journals `REJECTED`/`EXPIRED` for a command this process accepted that reached its start (worker and locks) past
   * `not_after`, so it never runs; refuses (`CommandStateError`) an entry that is not accepted here.
   */
  expire(commandId: string, message: string): Promise<DoneEntry> {
    return this.#op((db, now) => expireOp(db, commandId, message, this.#ctx(), now));
  }

  /** Journals a terminal rejection (never `BUSY`) so a duplicate delivery gets the same answer. */
  reject(commandId: string, input: AcceptInput, reason: RejectReason, message?: string): Promise<DoneEntry> {
    const m = message === undefined ? undefined : _message(message);
    return this.#op((db, now) => rejectOp(db, commandId, input, reason, m, this.#ctx(), now));
  }

  /** The entry of `commandId`, or null. */
  get(commandId: string): Promise<JournalEntry | null> {
    return this.#steps(() => readEntrySteps(commandId));
  }

  /** Done entries whose result the gateway has not acked (`Hello.unacked_results`). */
  unackedResults(): Promise<DoneEntry[]> {
    return this.#op((db) => unackedResultsOp(db));
  }

  /** Records `Ack.command_ids`: those results are no longer replayed. Unknown ids are ignored. */
  ackResults(commandIds: readonly string[]): Promise<number> {
    return this.#op((db) => ackResultsOp(db, commandIds));
  }

  /** `journal.Recover`: call once after open, before the first `Hello`. */
  recover(): Promise<RecoverReport> {
    return this.#op((db, now) => recoverOp(db, this.#ctx(), now));
  }

  /** `journal.Sweep`: 7-day retention of done and orphaned entries, expired exec tickets. */
  sweep(): Promise<SweepReport> {
    return this.#op((db, now) => sweepOp(db, this.#ctx(), now));
  }

  // ---- events ---------------------------------------------------------------------------------------------------

  /**
   * Appends an event with the next sequence number; when full, the oldest metric events are dropped first. With
   * `announce`, the same transaction records what an allocation event says (see {@link announcedAllocations}).
   */
  appendEvent(cls: EventClass, payload: Uint8Array, announce?: AllocationAnnouncement): Promise<AppendOutcome> {
    return this.#op((db, now) => {
      this.#full = undefined;
      return appendEvent(db, this.bounds, cls, payload, now, announce);
    });
  }

  /**
   * Allocation ids whose last journaled allocation event is `AllocationBound`: what the devices converger compares
   * its holds with, so a crash between a hold's write and its event loses neither `AllocationBound` nor
   * `AllocationReleased`. Acks do not change it.
   */
  announcedAllocations(): Promise<Set<string>> {
    return this.#op((db) => announcedAllocations(db));
  }

  /** Unacked events above `afterSeq` (default 0), oldest first, at most `limit` (default 1000). */
  unackedEvents(opts: { afterSeq?: number; limit?: number } = {}): Promise<JournalEvent[]> {
    return this.#op((db) => listEvents(db, opts.afterSeq ?? 0, opts.limit ?? 1000));
  }

  /** A cumulative `Ack{journal_id, event_seq}`; an ack for another journal id is ignored (returns 0). */
  ackEvents(journalId: string, eventSeq: number): Promise<number> {
    if (journalId !== this.journalId) return Promise.resolve(0);
    return this.#op((db) => {
      this.#full = undefined;
      return ackEventsUpTo(db, eventSeq);
    });
  }

  /** The unacked backlog by class. */
  eventTotals(): Promise<EventTotals> {
    return this.#op((db) => eventTotals(db));
  }

  /** Whether new commands get `BUSY`. */
  isFull(): Promise<boolean> {
    return this.#op(async (db) => isFull(await eventTotals(db), this.bounds));
  }

  // ---- meta, spec, time mark, tickets ---------------------------------------------------------------------------

  /** The `meta` part. */
  async meta(): Promise<JournalMeta> {
    const m = await this.#op((db) => getMeta(db));
    // A mark seen but not yet written (heartbeat marks are coalesced) is still the mark.
    return this.#mark !== undefined && this.#mark > m.serverTimeMark ? { ...m, serverTimeMark: this.#mark } : m;
  }

  /** Records the node id (after join or rebind). */
  setNodeId(nodeId: string): Promise<void> {
    return this.#op((db) => setMeta(db, "node_id", nodeId));
  }

  /** Records the last session epoch. */
  setLastEpoch(epoch: number): Promise<void> {
    return this.#op((db) => setMeta(db, "last_epoch", _int("epoch", epoch)));
  }

  /** Records the applied spec generation. */
  setAppliedGeneration(generation: number): Promise<void> {
    return this.#op((db) => setMeta(db, "applied_generation", _int("generation", generation)));
  }

  /** Stores the last full spec (bytes, hash, signature). */
  putSpec(spec: StoredSpec): Promise<void> {
    return this.#op(async (db, now) => {
      await db.run(
        `INSERT INTO spec (id, generation, bytes, hash, signature, stored_at) VALUES (1, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET generation = excluded.generation, bytes = excluded.bytes,
           hash = excluded.hash, signature = excluded.signature, stored_at = excluded.stored_at`,
        [_int("generation", spec.generation), spec.bytes, spec.hash, spec.signature ?? null, now],
      );
    });
  }

  /** The last full spec, or null. */
  getSpec(): Promise<StoredSpec | null> {
    return this.#op(async (db) => {
      const r = (await db.all("SELECT generation, bytes, hash, signature FROM spec WHERE id = 1"))[0];
      if (r === undefined) return null;
      const sig = colBytesOrNull(r, "signature");
      return {
        generation: colNum(r, "generation"),
        bytes: colBytesOrNull(r, "bytes") ?? new Uint8Array(),
        hash: colStr(r, "hash"),
        ...(sig !== null ? { signature: sig } : {}),
      };
    });
  }

  /**
   * Sees a server time (from `Welcome` or a heartbeat): the mark only moves forward, mirrored into identity.json.
   * Throws `ServerTimeRegressed` for a `Welcome` more than 5 minutes before the mark and `ServerTimeAhead` for a
   * time too far ahead (time_mark.ts); the mark is then unchanged. Returns the mark.
   *
   * Writes are coalesced (issue 28, item 6): the mark held in memory moves at once, and it reaches the journal and
   * identity.json (both fsynced) on every `Welcome` that moves it and otherwise once it is
   * {@link MARK_PERSIST_STEP_MS} past the written one, one write at a time; a heartbeat flood costs no I/O. A crash
   * loses at most that step of the mark, well inside the 5 minutes a `Welcome` may be behind it.
   */
  async observeServerTime(serverTime: number, source: ServerTimeSource): Promise<number> {
    if (this.#mark === undefined || this.#markWritten === undefined) {
      const written = (await this.#op((db) => getMeta(db))).serverTimeMark;
      this.#markWritten ??= written;
      this.#mark ??= written;
    }
    const mark = advanceMark(this.#mark, serverTime, source, this.#clock.now());
    this.#mark = mark;
    if (mark - this.#markWritten >= MARK_PERSIST_STEP_MS || (source === "welcome" && mark > this.#markWritten)) {
      await this.#writeMark();
    }
    return mark;
  }

  /** Writes the mark held in memory (and any that moves while writing); one writer at a time. */
  #writeMark(): Promise<void> {
    this.#markWrite ??= (async () => {
      try {
        while (this.#mark !== undefined && this.#mark > (this.#markWritten ?? 0)) {
          const m = this.#mark;
          await this.#op(async (db) => {
            if (m > (await getMeta(db)).serverTimeMark) await setMeta(db, "server_time_mark", m);
          });
          await updateIdentity(this.dataDir, { server_time_mark: m });
          this.#markWritten = m;
        }
      } finally {
        this.#markWrite = undefined;
      }
    })();
    return this.#markWrite;
  }

  /**
   * Sets the mark to `mark`, lower or higher, in the journal and identity.json: the operator's reset of a mark that is
   * wrong (`journal reset-time-mark`, with the daemon stopped; it holds the journal's lock). Returns the old mark.
   */
  async resetTimeMark(mark: number): Promise<number> {
    const v = _int("mark", mark);
    const old = await this.#op(async (db) => {
      const before = (await getMeta(db)).serverTimeMark;
      await setMeta(db, "server_time_mark", v);
      return before;
    });
    await updateIdentity(this.dataDir, { server_time_mark: v });
    this.#mark = v;
    this.#markWritten = v;
    return old;
  }

  /** Records an exec ticket's `jti` until it expires; throws `TicketReplayed` or `TicketsFull`. */
  useExecTicket(jti: string, expiresAt: number): Promise<void> {
    return this.#op((db, now) => useTicket(db, jti, _int("expiresAt", expiresAt), now, this.#maxTickets));
  }

  /** Counts by command state, for `inspect`. */
  commandCounts(): Promise<Record<string, number>> {
    return this.#op(async (db) => {
      const out: Record<string, number> = { accepted: 0, running: 0, done: 0 };
      for (const r of await db.all("SELECT state, count(*) AS n FROM commands GROUP BY state")) {
        out[colStr(r, "state")] = colNum(r, "n");
      }
      return out;
    });
  }

  /** Waits for queued operations, closes the connection and releases the lock; idempotent. */
  /**
   * Lets go of the data dir at once, as a process that dies does, for an in-process simulation of a SIGKILL (the sim
   * fleet): the connection is closed where it stands (SQLite rolls back a transaction not yet committed; a commit
   * whose fsync has not returned stays in the WAL, as it would after a kill without a power loss), the WAL handle and
   * the one-writer lock are released, and nothing more is written: no time mark, no drain. Every call queued or made
   * later rejects (the queue meets the closed connection and stops; `onStop` runs). A journal opened again on the
   * same data dir recovers exactly what a new process would.
   */
  abandon(): void {
    if (this.#closed) return;
    this.#closed = true;
    void this.#db.close().catch((e) => this.#log.warn({ err: e, journal_id: this.journalId }, "abandon: close failed"));
    this.#wal.close();
    this.#lock.release();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#queue.stopped === null) await this.#writeMark();
    this.#closed = true;
    await this.#queue.drain();
    await this.#db.close().catch((e) => {
      if (this.#queue.stopped === null) throw e;
    });
    this.#wal.close();
    this.#lock.release();
  }
}

/** The most bytes of a result message journaled (it goes back in `Hello` until acked). */
export const MAX_RESULT_MESSAGE_BYTES = 2048;

/** For the command transitions written as one statement (acceptSteps, markRunningSteps, finishSteps: see their docs). */
const _ONE_WRITE: OpOptions = { oneWrite: true };

function _message(m: string): string {
  return boundedString(m, MAX_RESULT_MESSAGE_BYTES);
}

function _int(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} ${v} is not a non-negative integer`);
  return v;
}
