/**
 * `journal.Recover`, run once at process start: settles what needs no server input (`rebooted` and
 * `interrupted`) so those results go out in the next `Hello`; retry-safe entries wait for the server to redeliver
 * them, so a re-execution passes the `not_after` and `min_generation` checks again.
 *
 * @module
 */
import { leftoverOp, settleOp, unackedResultsOp } from "./commands.ts";
import { type ResolveContext, resolveEntry } from "./resolve.ts";
import type { SqlDriver } from "./sql_driver.ts";
import type { AcceptedEntry, DoneEntry, RunningEntry } from "./types.ts";

/** What recovery did and what the next `Hello` carries. */
export interface RecoverReport {
  /** Entries settled now: `rebooted` (`SUCCEEDED`) or `interrupted` (`FAILED`). */
  readonly settled: readonly DoneEntry[];
  /** Retry-safe entries left for redelivery. */
  readonly waiting: readonly (AcceptedEntry | RunningEntry)[];
  /** Every done entry whose result is not acked yet (`Hello.unacked_results`), the settled ones included. */
  readonly unackedResults: readonly DoneEntry[];
}

/** Runs recovery inside one journal operation, using the flags each entry was accepted with. */
export async function recoverOp(db: SqlDriver, ctx: ResolveContext, now: number): Promise<RecoverReport> {
  const settled: DoneEntry[] = [];
  const waiting: (AcceptedEntry | RunningEntry)[] = [];
  for (const entry of await leftoverOp(db, ctx)) {
    const r = resolveEntry(entry, entry, ctx);
    if (r.action === "rebooted" || r.action === "interrupted") {
      settled.push(await settleOp(db, entry.id, r.result, now));
    } else waiting.push(entry);
  }
  return { settled, waiting, unackedResults: await unackedResultsOp(db) };
}
