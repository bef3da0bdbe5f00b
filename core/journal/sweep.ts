/**
 * `journal.Sweep`: deletes done entries older than 7 days, and accepted or running entries that an earlier process
 * left and nothing redelivered within 7 days (the server has long expired them). Entries of the running process are
 * never swept. Expired exec tickets go too.
 *
 * @module
 */
import { sweepTickets } from "./exec_tickets.ts";
import type { ResolveContext } from "./resolve.ts";
import type { SqlDriver } from "./sql_driver.ts";

/** How long done and orphaned entries are kept: 7 days. */
export const RETENTION_MS = 7 * 24 * 60 * 60_000;

/** What a sweep removed. */
export interface SweepReport {
  readonly done: number;
  readonly orphaned: number;
  readonly tickets: number;
}

/** Runs the sweep inside one journal operation. An entry exactly 7 days old is kept. */
export async function sweepOp(db: SqlDriver, ctx: ResolveContext, now: number): Promise<SweepReport> {
  const cutoff = now - RETENTION_MS;
  const done = await db.run("DELETE FROM commands WHERE state = 'done' AND updated_at < ?", [cutoff]);
  const orphaned = await db.run(
    "DELETE FROM commands WHERE state IN ('accepted', 'running') AND incarnation <> ? AND updated_at < ?",
    [ctx.incarnation, cutoff],
  );
  return { done, orphaned, tickets: await sweepTickets(db, now) };
}
