/**
 * The journal's typed errors. Each carries a `reason` string callers branch on; refusals (a caller's request the
 * journal declines, nothing written) are {@link JournalRefusal}s, everything else stops or prevents the journal.
 *
 * @module
 */

/** Base class: every journal error carries a machine-readable reason. */
export class JournalError extends Error {
  override name = "JournalError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A request the journal declines without writing anything; the journal stays usable. */
export class JournalRefusal extends JournalError {
  override name = "JournalRefusal";
}

/** The journal is full (unacked transitions and results reach a bound): new commands get `BUSY`, never journaled. */
export class JournalBusy extends JournalRefusal {
  override name = "JournalBusy";
  constructor(message: string) {
    super("BUSY", message);
  }
}

/** A state transition the entry's current state does not allow (e.g. `accept` of an id that is live or done). */
export class CommandStateError extends JournalRefusal {
  override name = "CommandStateError";
}

/** An exec ticket whose `jti` was already used. */
export class TicketReplayed extends JournalRefusal {
  override name = "TicketReplayed";
  constructor(readonly jti: string) {
    super("ticket-replayed", `exec ticket ${JSON.stringify(jti)} was already used`);
  }
}

/** The exec-ticket set holds its maximum of unexpired tickets; new tickets are refused until some expire. */
export class TicketsFull extends JournalRefusal {
  override name = "TicketsFull";
  constructor(limit: number) {
    super("tickets-full", `the exec-ticket set holds ${limit} unexpired tickets; new tickets are refused`);
  }
}

/** A `Welcome` whose `server_time` is more than 5 minutes before the server time mark. */
export class ServerTimeRegressed extends JournalRefusal {
  override name = "ServerTimeRegressed";
  constructor(readonly serverTime: number, readonly mark: number) {
    super(
      "server-time-regressed",
      `Welcome server_time ${new Date(serverTime).toISOString()} is ${
        Math.round((mark - serverTime) / 1000)
      }s before the server time mark ${new Date(mark).toISOString()} (more than 5 minutes)`,
    );
  }
}

/**
 * A server time further ahead than {@link MAX_FORWARD_SKEW_MS} of the later of the mark and this host's clock, or
 * past year 9999: taking it would move the mark for good and refuse every honest `Welcome` after it.
 */
export class ServerTimeAhead extends JournalRefusal {
  override name = "ServerTimeAhead";
  constructor(readonly serverTime: number, readonly limit: number, readonly source: string) {
    super(
      "server-time-ahead",
      `${source} server_time ${Number.isFinite(serverTime) ? serverTime : String(serverTime)} ms is past ${
        new Date(limit).toISOString()
      } (more than 24 hours ahead of the later of the server time mark and this host's clock); refused, the mark ` +
        `is unchanged (check the host's clock, or reset a wrong mark with "journal reset-time-mark")`,
    );
  }
}

/** The journal refuses to open with durability weaker than WAL + `synchronous=NORMAL` (plus its own WAL sync). */
export class JournalDurabilityError extends JournalError {
  override name = "JournalDurabilityError";
  constructor(message: string) {
    super("weak-durability", message);
  }
}

/** Another process holds the data directory's journal. */
export class JournalLocked extends JournalError {
  override name = "JournalLocked";
  constructor(readonly lockPath: string, readonly holder: string) {
    super("journal-locked", `the journal in ${lockPath} is held by another process (${holder}); one writer only`);
  }
}

/** A write or fsync failed: the journal stopped (fail-stop) and refuses every further call. */
export class JournalStopped extends JournalError {
  override name = "JournalStopped";
  constructor(message: string, options?: ErrorOptions) {
    super("journal-stopped", message, options);
  }
}

/** The journal failed its integrity check (used internally to trigger quarantine). */
export class JournalDamaged extends JournalError {
  override name = "JournalDamaged";
  constructor(message: string, options?: ErrorOptions) {
    super("journal-damaged", message, options);
  }
}
