/**
 * Exec tickets (000 §The journal): the `jti` of every exec ticket already used, kept until the ticket expires; at
 * most 10,000, and a full set refuses new tickets.
 *
 * @module
 */
import { TicketReplayed, TicketsFull } from "./errors.ts";
import { colNum, type SqlDriver } from "./sql_driver.ts";

/** The most unexpired tickets kept. */
export const MAX_EXEC_TICKETS = 10_000;

/**
 * Records `jti` as used until `expiresAt`; throws {@link TicketReplayed} for a `jti` already used and unexpired,
 * {@link TicketsFull} when the set holds `limit` unexpired tickets. Expired tickets are forgotten first.
 */
export async function useTicket(
  db: SqlDriver,
  jti: string,
  expiresAt: number,
  now: number,
  limit = MAX_EXEC_TICKETS,
): Promise<void> {
  if (jti.length === 0 || jti.length > 256) {
    throw new RangeError(`exec ticket jti has ${jti.length} characters (1..256)`);
  }
  await db.run("DELETE FROM exec_tickets WHERE expires_at <= ?", [now]);
  if ((await db.all("SELECT 1 FROM exec_tickets WHERE jti = ?", [jti])).length > 0) throw new TicketReplayed(jti);
  const n = colNum((await db.all("SELECT count(*) AS n FROM exec_tickets"))[0]!, "n");
  if (n >= limit) throw new TicketsFull(limit);
  await db.run("INSERT INTO exec_tickets (jti, expires_at) VALUES (?, ?)", [jti, expiresAt]);
}

/** Forgets expired tickets; returns how many. */
export function sweepTickets(db: SqlDriver, now: number): Promise<number> {
  return db.run("DELETE FROM exec_tickets WHERE expires_at <= ?", [now]);
}
