/**
 * Mapping between a `commands` row and a typed {@link JournalEntry}.
 *
 * @module
 */
import { JournalDamaged } from "./errors.ts";
import {
  colBytesOrNull,
  colNum,
  colStr,
  colStrOrNull,
  type SqlDriver,
  type SqlRow,
  type SqlValue,
} from "./sql_driver.ts";
import { all, runSteps, type SqlSteps } from "./sql_steps.ts";
import type { CommandResult, DoneEntry, JournalEntry, TerminalState } from "./types.ts";

const TERMINAL: readonly string[] = ["SUCCEEDED", "FAILED", "REJECTED", "CANCELLED"];

/** Decodes one `commands` row; a row that breaks the shape is {@link JournalDamaged}. */
export function entryFromRow(row: SqlRow): JournalEntry {
  const base = {
    id: colStr(row, "id"),
    kind: colStr(row, "kind"),
    retrySafe: colNum(row, "retry_safe") === 1,
    selfTerminating: colNum(row, "self_terminating") === 1,
    incarnation: colStr(row, "incarnation"),
    createdAt: colNum(row, "created_at"),
    updatedAt: colNum(row, "updated_at"),
  };
  const state = colStr(row, "state");
  if (state === "accepted") return { ...base, state };
  if (state === "running") return { ...base, state, bootId: colStr(row, "boot_id") };
  if (state !== "done") throw new JournalDamaged(`command ${base.id} has state ${JSON.stringify(state)}`);
  const outcome = colStr(row, "outcome");
  if (!TERMINAL.includes(outcome)) throw new JournalDamaged(`command ${base.id} has outcome ${outcome}`);
  const result: {
    -readonly [K in keyof CommandResult]: CommandResult[K];
  } = { state: outcome as TerminalState, bootId: colStr(row, "boot_id") };
  const code = colStrOrNull(row, "code");
  if (code !== null) result.code = code;
  const message = colStrOrNull(row, "message");
  if (message !== null) result.message = message;
  const body = colBytesOrNull(row, "body");
  if (body !== null) result.body = body;
  if (colNum(row, "rebooted") === 1) {
    result.rebooted = true;
    const prev = colStrOrNull(row, "previous_boot_id");
    if (prev !== null) result.previousBootId = prev;
  }
  return { ...base, state, result, resultAcked: colNum(row, "result_acked") === 1 };
}

/** Reads one entry by id, or null. */
export function readEntry(db: SqlDriver, id: string): Promise<JournalEntry | null> {
  return runSteps(db, readEntrySteps(id));
}

/** {@link readEntry} as steps (`sql_steps.ts`). */
export function* readEntrySteps(id: string): SqlSteps<JournalEntry | null> {
  const rows = yield* all("SELECT * FROM commands WHERE id = ?", [id]);
  return rows[0] === undefined ? null : entryFromRow(rows[0]);
}

const _DONE_SET = `state = 'done', boot_id = ?, outcome = ?, code = ?, message = ?, body = ?, rebooted = ?,
       previous_boot_id = ?, result_acked = 0, updated_at = ?`;

function _doneArgs(result: CommandResult, now: number): SqlValue[] {
  return [
    result.bootId,
    result.state,
    result.code ?? null,
    result.message ?? null,
    result.body ?? null,
    result.rebooted === true ? 1 : 0,
    result.previousBootId ?? null,
    now,
  ];
}

/** Writes `result` as the entry's terminal state (the row must exist). */
export async function writeDone(db: SqlDriver, id: string, result: CommandResult, now: number): Promise<void> {
  await db.run(`UPDATE commands SET ${_DONE_SET} WHERE id = ?`, [..._doneArgs(result, now), id]);
}

/**
 * Steps (`sql_steps.ts`) that write `result` as the terminal state of an entry that `incarnation` holds in flight (accepted or running), and
 * returns the entry as written; null, writing nothing, for any other entry or none. Only the four columns the call
 * does not already know come back (the rest of the entry is what this statement wrote).
 */
export function* writeDoneIf(
  id: string,
  result: CommandResult,
  now: number,
  incarnation: string,
): SqlSteps<DoneEntry | null> {
  const row = (yield* all(
    `UPDATE commands SET ${_DONE_SET} WHERE id = ? AND state IN ('accepted', 'running') AND incarnation = ?
     RETURNING kind, retry_safe, self_terminating, created_at`,
    [..._doneArgs(result, now), id, incarnation],
  ))[0];
  if (row === undefined) return null;
  return {
    id,
    state: "done",
    kind: colStr(row, "kind"),
    retrySafe: colNum(row, "retry_safe") === 1,
    selfTerminating: colNum(row, "self_terminating") === 1,
    incarnation,
    createdAt: colNum(row, "created_at"),
    updatedAt: now,
    result: _written(result),
    resultAcked: false,
  };
}

/** `result` as {@link entryFromRow} reads it back after {@link _doneArgs} wrote it (absent fields stay absent). */
function _written(result: CommandResult): CommandResult {
  const out: { -readonly [K in keyof CommandResult]: CommandResult[K] } = {
    state: result.state,
    bootId: result.bootId,
  };
  if (result.code !== undefined) out.code = result.code;
  if (result.message !== undefined) out.message = result.message;
  if (result.body !== undefined) out.body = result.body;
  if (result.rebooted === true) {
    out.rebooted = true;
    if (result.previousBootId !== undefined) out.previousBootId = result.previousBootId;
  }
  return out;
}
