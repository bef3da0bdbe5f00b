/**
 * The `commands` part: the state transitions of an entry, each an operation run inside the write queue's
 * transaction. `accepted` → `running{boot_id}` → `done{result, boot_id}`; a journaled rejection is `done` with a
 * `REJECTED` result and no `accepted` before it.
 *
 * @module
 */
import { CommandStateError, JournalDamaged } from "./errors.ts";
import { entryFromRow, readEntry, readEntrySteps, writeDone, writeDoneIf } from "./entry_row.ts";
import { all, run, type SqlSteps } from "./sql_steps.ts";
import type { ResolveContext } from "./resolve.ts";
import type { SqlDriver } from "./sql_driver.ts";
import type {
  AcceptedEntry,
  AcceptInput,
  CommandResult,
  DoneEntry,
  JournalEntry,
  OutcomeInput,
  RejectReason,
  RunningEntry,
} from "./types.ts";
import { REJECT_REASONS } from "./types.ts";

function _live(e: JournalEntry, ctx: ResolveContext): boolean {
  return e.state !== "done" && e.incarnation === ctx.incarnation;
}

/**
 * Journals `accepted` for a new command, or re-accepts one an earlier process left unfinished (the `reexecute`
 * row, after the acceptance checks ran again). Refuses an id that is done or in flight in this process. One
 * statement changes rows (the INSERT, or the UPDATE after an INSERT that changed nothing), and every refusal comes
 * before it: the write queue runs it without a savepoint (`oneWrite`).
 */
export function* acceptSteps(
  id: string,
  input: AcceptInput,
  ctx: ResolveContext,
  now: number,
): SqlSteps<AcceptedEntry> {
  const args = [input.kind, input.retrySafe ? 1 : 0, input.selfTerminating ? 1 : 0, ctx.incarnation, now];
  const entry = (createdAt: number): AcceptedEntry => ({
    id,
    state: "accepted",
    kind: input.kind,
    retrySafe: input.retrySafe,
    selfTerminating: input.selfTerminating,
    incarnation: ctx.incarnation,
    createdAt,
    updatedAt: now,
  });
  // A new id, the common case, costs this one statement; an id already there is read and judged below.
  const inserted = yield* run(
    `INSERT INTO commands (id, state, kind, retry_safe, self_terminating, incarnation, boot_id, created_at, updated_at)
     VALUES (?, 'accepted', ?, ?, ?, ?, NULL, ?, ?) ON CONFLICT (id) DO NOTHING`,
    [id, ...args, now],
  );
  if (inserted === 1) return entry(now);
  const prev = yield* readEntrySteps(id);
  if (prev === null) throw new JournalDamaged(`command ${id}: insert ignored, yet no entry holds the id`);
  if (prev.state === "done") {
    throw new CommandStateError("already-done", `command ${id} is done (${prev.result.state}); resend its result`);
  }
  if (_live(prev, ctx)) {
    throw new CommandStateError("in-flight", `command ${id} is ${prev.state} in this process; re-attach to it`);
  }
  yield* run(
    `UPDATE commands SET state = 'accepted', kind = ?, retry_safe = ?, self_terminating = ?, incarnation = ?,
       boot_id = NULL, updated_at = ? WHERE id = ?`,
    [...args, id],
  );
  return entry(prev.createdAt);
}

/**
 * `accepted` → `running{boot_id}`, for an entry this process accepted (idempotent when already running). Its one
 * write comes first and every refusal after a write that changed nothing (`oneWrite`).
 */
export function* markRunningSteps(id: string, ctx: ResolveContext, now: number): SqlSteps<RunningEntry> {
  // The common case in one statement: an entry this process accepted moves to running and comes back as written.
  const row = (yield* all(
    `UPDATE commands SET state = 'running', boot_id = ?, updated_at = ?
     WHERE id = ? AND state = 'accepted' AND incarnation = ? RETURNING *`,
    [ctx.bootId, now, id, ctx.incarnation],
  ))[0];
  if (row !== undefined) return entryFromRow(row) as RunningEntry;
  const prev = yield* readEntrySteps(id);
  if (prev === null || !_live(prev, ctx)) {
    throw new CommandStateError(
      "not-accepted",
      `command ${id} is ${prev === null ? "unknown" : `${prev.state} (incarnation ${prev.incarnation})`}; ` +
        "only a command this process accepted can start running",
    );
  }
  if (prev.state === "running") return prev;
  throw new JournalDamaged(`command ${id}: accepted by this process, yet not moved to running`);
}

/**
 * Journals the terminal result of a command this process accepted. A command already done keeps its first result
 * (a real outcome wins over a late cancel): the stored entry is returned unchanged. Its one write comes first and
 * every refusal after a write that changed nothing (`oneWrite`).
 */
export function* finishSteps(
  id: string,
  outcome: OutcomeInput,
  ctx: ResolveContext,
  now: number,
): SqlSteps<DoneEntry> {
  // The common case in one statement: an entry this process accepted (or started) takes its result.
  const written = yield* writeDoneIf(id, { ..._outcome(outcome), bootId: ctx.bootId }, now, ctx.incarnation);
  if (written !== null) return written;
  const prev = yield* readEntrySteps(id);
  if (prev !== null && prev.state === "done") return prev;
  throw new CommandStateError(
    "not-accepted",
    `command ${id} is ${prev === null ? "unknown" : `left by incarnation ${prev.incarnation}`}; ` +
      "only a command this process accepted can finish",
  );
}

/**
 * Journals `REJECTED` with reason `EXPIRED` for a command this process accepted whose start, once it held its worker
 * and locks, came past its `not_after`: it never ran. Only an `accepted` entry of this process qualifies (a running
 * one reports its real outcome); a done command keeps its result.
 */
export async function expireOp(
  db: SqlDriver,
  id: string,
  message: string,
  ctx: ResolveContext,
  now: number,
): Promise<DoneEntry> {
  const prev = await readEntry(db, id);
  if (prev !== null && prev.state === "done") return prev;
  if (prev === null || !_live(prev, ctx) || prev.state !== "accepted") {
    throw new CommandStateError(
      prev?.state === "running" ? "running" : "not-accepted",
      `command ${id} is ${prev === null ? "unknown" : `${prev.state} (incarnation ${prev.incarnation})`}; ` +
        "only a command this process accepted and has not started can expire at its start",
    );
  }
  await writeDone(db, id, { state: "REJECTED", code: "EXPIRED", message, bootId: ctx.bootId }, now);
  return (await readEntry(db, id)) as DoneEntry;
}

/**
 * Journals a terminal rejection so a duplicate delivery gets the same answer: for a new command, or for one an
 * earlier process left that failed its acceptance checks on re-execution. A done command keeps its result.
 */
export function rejectOp(
  db: SqlDriver,
  id: string,
  input: AcceptInput,
  reason: RejectReason,
  message: string | undefined,
  ctx: ResolveContext,
  now: number,
): Promise<DoneEntry> {
  if (!REJECT_REASONS.includes(reason)) {
    throw new TypeError(`${JSON.stringify(reason)} is not a journaled rejection reason (BUSY is never journaled)`);
  }
  const result = { state: "REJECTED" as const, code: reason, bootId: ctx.bootId, ...(message ? { message } : {}) };
  return _settleUnstarted(db, id, input, result, false, ctx, now);
}

/**
 * Journals `CANCELLED` for a command whose side effect has not started: one still queued in this process
 * (accepted, not running), one deferred before acceptance (no entry yet: journaled now so a duplicate gets the same
 * answer), or a retry-safe one an earlier process left waiting for redelivery. A done command keeps its result
 * (a real outcome wins over a late cancel); a running one refuses with `running` (its real outcome will come).
 */
export function cancelOp(
  db: SqlDriver,
  id: string,
  input: AcceptInput,
  message: string | undefined,
  ctx: ResolveContext,
  now: number,
): Promise<DoneEntry> {
  const result = { state: "CANCELLED" as const, bootId: ctx.bootId, ...(message ? { message } : {}) };
  return _settleUnstarted(db, id, input, result, true, ctx, now);
}

async function _settleUnstarted(
  db: SqlDriver,
  id: string,
  input: AcceptInput,
  result: CommandResult,
  queuedHereToo: boolean,
  ctx: ResolveContext,
  now: number,
): Promise<DoneEntry> {
  const prev = await readEntry(db, id);
  if (prev !== null && prev.state === "done") return prev;
  if (prev !== null && _live(prev, ctx)) {
    if (prev.state === "running" || !queuedHereToo) {
      throw new CommandStateError(
        prev.state === "running" ? "running" : "in-flight",
        `command ${id} is ${prev.state} in this process; it reports its real outcome`,
      );
    }
  }
  if (prev === null) {
    await db.run(
      `INSERT INTO commands (id, state, kind, retry_safe, self_terminating, incarnation, boot_id, created_at, updated_at)
       VALUES (?, 'accepted', ?, ?, ?, ?, NULL, ?, ?)`,
      [id, input.kind, input.retrySafe ? 1 : 0, input.selfTerminating ? 1 : 0, ctx.incarnation, now, now],
    );
  } else {
    await db.run("UPDATE commands SET incarnation = ? WHERE id = ?", [ctx.incarnation, id]);
  }
  await writeDone(db, id, result, now);
  return (await readEntry(db, id)) as DoneEntry;
}

/** Writes a result the journal settled itself (`rebooted`, `interrupted`) for an entry an earlier process left. */
export async function settleOp(
  db: SqlDriver,
  id: string,
  result: CommandResult,
  now: number,
): Promise<DoneEntry> {
  const prev = await readEntry(db, id);
  if (prev === null) throw new CommandStateError("unknown", `command ${id} is not in the journal`);
  if (prev.state === "done") return prev;
  await writeDone(db, id, result, now);
  return (await readEntry(db, id)) as DoneEntry;
}

/** Done entries whose result the gateway has not acked yet (replayed in `Hello`), oldest first. */
export async function unackedResultsOp(db: SqlDriver): Promise<DoneEntry[]> {
  const rows = await db.all("SELECT * FROM commands WHERE state = 'done' AND result_acked = 0 ORDER BY updated_at, id");
  return rows.map(entryFromRow) as DoneEntry[];
}

/** Marks results acked (`Ack.command_ids`); unknown ids and ids not done are ignored. Returns how many changed. */
export async function ackResultsOp(db: SqlDriver, ids: readonly string[]): Promise<number> {
  let n = 0;
  for (const id of ids) {
    n += await db.run("UPDATE commands SET result_acked = 1 WHERE id = ? AND state = 'done' AND result_acked = 0", [
      id,
    ]);
  }
  return n;
}

/** Entries that an earlier process left accepted or running. */
export async function leftoverOp(db: SqlDriver, ctx: ResolveContext): Promise<(AcceptedEntry | RunningEntry)[]> {
  const rows = await db.all(
    "SELECT * FROM commands WHERE state IN ('accepted', 'running') AND incarnation <> ? ORDER BY created_at, id",
    [ctx.incarnation],
  );
  return rows.map(entryFromRow) as (AcceptedEntry | RunningEntry)[];
}

function _outcome(o: OutcomeInput): OutcomeInput {
  const out: { -readonly [K in keyof OutcomeInput]: OutcomeInput[K] } = { state: o.state };
  if (o.code !== undefined) out.code = o.code;
  if (o.message !== undefined) out.message = o.message;
  if (o.body !== undefined) out.body = o.body;
  return out;
}
