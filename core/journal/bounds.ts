/**
 * The journal's bounds (000 §The journal): 64 MiB and 10,000 unacked events by default, which config may lower
 * but never raise.
 *
 * Interpretation (written down here, see fixtures/README.md too): the bounds apply to the unacked event backlog,
 * the part that only acks drain. An event counts its payload bytes plus {@link EVENT_ROW_OVERHEAD}. When an append
 * would pass a bound, the oldest metric events are dropped until it fits; transitions and results are never
 * dropped, so they may pass the bound, and once transitions and results alone reach a bound the journal is
 * full: new commands get `BUSY` until acks drain the backlog.
 *
 * @module
 */
/** The journal's default bounds (000 §The journal): config may lower them, never raise them. */
export const JOURNAL_DEFAULT_MAX_BYTES = 64 * 1024 * 1024;
export const JOURNAL_DEFAULT_MAX_UNACKED_EVENTS = 10_000;

/** Bytes an event counts beyond its payload (sequence, class, timestamps, row and index overhead). */
export const EVENT_ROW_OVERHEAD = 64;

/** The bounds in use. */
export interface JournalBounds {
  readonly maxBytes: number;
  readonly maxUnackedEvents: number;
}

/** The default bounds. */
export const DEFAULT_BOUNDS: JournalBounds = {
  maxBytes: JOURNAL_DEFAULT_MAX_BYTES,
  maxUnackedEvents: JOURNAL_DEFAULT_MAX_UNACKED_EVENTS,
};

/**
 * The bounds from `ResolvedAgentConfig.journal`; throws RangeError for a bound above the default (config may
 * lower, never raise) or below 1.
 */
export function boundsFromConfig(cfg: { maxBytes: number; maxUnackedEvents: number }): JournalBounds {
  const check = (name: string, v: number, max: number) => {
    if (!Number.isSafeInteger(v) || v < 1 || v > max) {
      throw new RangeError(
        `journal ${name} is ${v}; it must be an integer from 1 to ${max} (config may only lower it)`,
      );
    }
  };
  check("max_bytes", cfg.maxBytes, JOURNAL_DEFAULT_MAX_BYTES);
  check("max_unacked_events", cfg.maxUnackedEvents, JOURNAL_DEFAULT_MAX_UNACKED_EVENTS);
  return { maxBytes: cfg.maxBytes, maxUnackedEvents: cfg.maxUnackedEvents };
}
