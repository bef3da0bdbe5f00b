/**
 * The daemon's condition set. Conditions carry their age on the daemon's monotonic clock (`age_ms`), never a
 * timestamp: the control plane derives `since` from its own clock.
 *
 * @module
 */

/** A condition as reported: type, status, reason, message and age. */
export interface ReportedCondition {
  readonly type: string;
  readonly status: boolean;
  readonly reason: string;
  readonly message: string;
  readonly age_ms: number;
}

interface _Held {
  status: boolean;
  reason: string;
  message: string;
  /** Monotonic milliseconds when status or reason last changed. */
  since: number;
}

/** A monotonic clock in milliseconds (`performance.now()` in production, a fake in tests). */
export type MonotonicClock = () => number;

/** The condition set, keyed by type (and an optional scope such as a GPU UUID: `XidError/GPU-…`). */
export class ConditionSet {
  readonly #held = new Map<string, _Held>();
  constructor(private readonly now: MonotonicClock = () => performance.now()) {}

  /** Sets a condition; its age restarts only when its status or reason changes. */
  set(type: string, status: boolean, reason: string, message = ""): void {
    const prev = this.#held.get(type);
    if (prev && prev.status === status && prev.reason === reason) {
      prev.message = message;
      return;
    }
    this.#held.set(type, { status, reason, message, since: this.now() });
  }

  /** Removes a condition; true when there was one. */
  clear(type: string): boolean {
    return this.#held.delete(type);
  }

  /** Removes every condition whose type starts with `prefix`. */
  clearPrefix(prefix: string): void {
    for (const k of [...this.#held.keys()]) if (k.startsWith(prefix)) this.#held.delete(k);
  }

  has(type: string): boolean {
    return this.#held.has(type);
  }

  /** The conditions with their ages now, sorted by type. */
  report(): ReportedCondition[] {
    const now = this.now();
    return [...this.#held.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([type, c]) => ({
      type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      age_ms: Math.max(0, Math.round(now - c.since)),
    }));
  }
}
