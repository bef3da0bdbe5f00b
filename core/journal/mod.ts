/**
 * The journal: the daemon's durable memory, which turns at-least-once delivery into at-most-once effect
 * (000 §"The journal", §"Duplicates and crash recovery").
 *
 * ## Parts
 *
 * `data_dir/journal.db` (SQLite) holds `meta` (node id, `journal_id`, event sequence, last epoch, applied
 * generation, server time mark), `commands` (id → {@link AcceptedEntry} | {@link RunningEntry} |
 * {@link DoneEntry}; done kept 7 days), `events` (unacked; `seq` from 1 per `journal_id`; class metric /
 * transition / result), `spec` (last full spec bytes, hash, signature), exec tickets (`jti` until expiry, at
 * most 10,000) and `announced_allocations` (the allocations whose last journaled event is `AllocationBound`, written
 * with that event). `data_dir/identity.json` (mode 0600, replaced durably) holds the certificates and trust bundle and
 * mirrors the server time mark; `data_dir/journal.lock` is the one-writer lock; `data_dir/quarantine/` keeps
 * damaged journals.
 *
 * ## Durability
 *
 * WAL with `synchronous=NORMAL`, read back after open: the journal refuses to open with anything weaker
 * ({@link JournalDurabilityError}). Every method resolves only after the transaction that ran it is committed and
 * the journal's own fdatasync of the WAL after that commit returned (`wal_sync.ts`: the same order on disk as
 * `synchronous=FULL`, with the fsync run off the event loop instead of inside `COMMIT` on it), so `accepted` is on
 * disk before any side effect. Concurrent calls are committed together (group commit, one fsync); calls made while
 * a sync runs form the next group, and their statements run at once, inside its open transaction, while the sync is
 * in flight (`write_queue.ts`); it commits and starts its own sync without waiting for that one to end while fewer
 * than {@link MAX_SYNCS_IN_FLIGHT} run (overlapping syncs, each on a file description of its own: `wal_sync.ts`), and
 * groups are answered in commit order, each once a sync that started after its commit returned. A caller whose call
 * comes after work off the event loop (the dispatcher, while a command's signature is checked on another thread)
 * announces it with `expectWrite()`, and the commit waits once for the callers announced when it could commit, so
 * that call joins the group rather than the next. A failed write or fsync stops the journal (fail-stop, {@link JournalStopped}): no
 * retry, every later call rejects, `onStop` lets the daemon exit. `resolve` of a command never journaled reads
 * outside the queue (no group, no fsync): acting on "no entry" needs no durability.
 *
 * ## Using it (the command path)
 *
 * ```ts
 * const journal = await Journal.open({ dataDir, bootId: await readBootId(), bounds: boundsFromConfig(cfg.journal) });
 * const hello = await journal.recover();           // settled rebooted/interrupted + unacked results for Hello
 * const r = await journal.resolve(cmd.id, flags);  // flags: the delivered kind's { retrySafe, selfTerminating }
 * switch (r.action) {
 *   case "execute": case "reexecute":              // run the acceptance checks first; a terminal refusal:
 *     // await journal.reject(cmd.id, { kind, ...flags }, "EXPIRED")   (BUSY is never journaled)
 *     await journal.accept(cmd.id, { kind, ...flags }); // throws JournalBusy when full: answer BUSY
 *     if (flags.selfTerminating) await journal.markRunning(cmd.id);
 *     // ... side effect ...
 *     await journal.finish(cmd.id, { state: "SUCCEEDED", body });  // or cancel(id, input) before the effect
 *     break;
 *   case "resend": // r.entry.result
 *   case "rebooted": case "interrupted": // r.result, already journaled
 *   case "reattach": // the execution in flight reports
 * }
 * await journal.ackResults(ack.command_ids);
 * ```
 *
 * `resolve` and `accept` are separate operations: two deliveries of one id resolved in the same group both see
 * `execute`, and the second `accept` throws {@link CommandStateError} with reason `in-flight` (treat it as
 * `reattach`) or `already-done` (treat it as `resend`). The crash campaign exercises exactly that.
 *
 * Every method resolves after its transaction committed; a method that throws a {@link JournalRefusal}
 * (`JournalBusy`, `CommandStateError`, `TicketReplayed`, `TicketsFull`, `ServerTimeRegressed`) or a
 * TypeError/RangeError for a bad argument wrote nothing and leaves the journal usable. Anything else is
 * {@link JournalStopped}: the daemon exits.
 *
 * ## Storage
 *
 * The binding sits behind {@link SqlDriver}. Production uses Deno's built-in `node:sqlite`: `@libsql/client` (the
 * design card's first choice) loads a native addon, which needs `--allow-ffi`, a permission that lifts Deno's
 * sandbox for the whole process; and `deno task bench:journal` measures both on the same disk (figures in the
 * issue's closing note). `driver_libsql.ts` stays beside it for the benchmark and the driver contract suite.
 * `node:sqlite` answers on the calling thread, so its driver also offers those calls synchronously
 * ({@link SqlDriver.sync}): the write queue runs its own statements through them, and the operations on every command's
 * path (accept, markRunning, finish, get, resolve's read) are written once as SQL steps (`sql_steps.ts`), run inline
 * there with no promise per statement, and awaited step by step on an async binding.
 *
 * ## Interpretations
 *
 * - The 64 MiB / 10,000 bounds apply to the unacked event backlog (see bounds.ts); transitions and results are
 *   never dropped and may pass a bound, and once they alone reach one, `accept` throws {@link JournalBusy}.
 * - A metric event that does not fit even after every older metric was dropped is not journaled (no sequence
 *   number is spent on it); a dropped metric's sequence number is never reused.
 * - The exec-ticket cap counts unexpired tickets; expired ones are forgotten before counting.
 *
 * @module
 */
export { Journal, JOURNAL_FILE, type JournalLogger, type JournalOptions, type OpenReport } from "./journal.ts";
export {
  type AcceptedEntry,
  type AcceptInput,
  type CommandResult,
  type DoneEntry,
  EVENT_CLASSES,
  type EventClass,
  type JournalEntry,
  type JournalEvent,
  type JournalMeta,
  type OutcomeInput,
  REJECT_REASONS,
  type RejectReason,
  type ResolveFlags,
  type RunningEntry,
  type StoredSpec,
  type TerminalState,
} from "./types.ts";
export {
  CommandStateError,
  JournalBusy,
  JournalDamaged,
  JournalDurabilityError,
  JournalError,
  JournalLocked,
  JournalRefusal,
  JournalStopped,
  ServerTimeAhead,
  ServerTimeRegressed,
  TicketReplayed,
  TicketsFull,
} from "./errors.ts";
export { INTERRUPTED, type Resolution, type ResolveContext, resolveEntry } from "./resolve.ts";
export type { RecoverReport } from "./recover.ts";
export { RETENTION_MS, type SweepReport } from "./sweep.ts";
export {
  boundsFromConfig,
  DEFAULT_BOUNDS,
  EVENT_ROW_OVERHEAD,
  JOURNAL_DEFAULT_MAX_BYTES,
  JOURNAL_DEFAULT_MAX_UNACKED_EVENTS,
  type JournalBounds,
} from "./bounds.ts";
export type { AllocationAnnouncement, AppendOutcome, EventTotals } from "./events.ts";
export { MAX_EXEC_TICKETS } from "./exec_tickets.ts";
export {
  advanceMark,
  forwardLimit,
  MARK_PERSIST_STEP_MS,
  MAX_FORWARD_SKEW_MS,
  MAX_SERVER_TIME_MS,
  type ServerTimeSource,
  WELCOME_MAX_REGRESSION_MS,
} from "./time_mark.ts";
export { BOOT_ID_PATH, readBootId } from "./boot_id.ts";
export { type Identity, IDENTITY_FILE, IdentityFileError, readIdentity, updateIdentity } from "./identity_file.ts";
export { LOCK_FILE, lockHolder } from "./lock.ts";
export { QUARANTINE_DIR, type Quarantined } from "./quarantine.ts";
export type { SqlDriver, SqlDriverFactory, SqlRow, SqlValue } from "./sql_driver.ts";
export { openNodeSqlite } from "./driver_node_sqlite.ts";
export { MAX_SYNCS_IN_FLIGHT, type QueueStats } from "./write_queue.ts";
export type { WalSyncStats } from "./wal_sync.ts";
// inspectJournal and journalHealth (`inspect.ts`) are the CLI's and doctor's, imported from there: not every start.
export { fsyncDir, writeFileDurable } from "./durable_file.ts";
