/**
 * The daemon's condition set. Conditions carry their age on the daemon's monotonic clock (`age_ms`), never a
 * timestamp: the control plane derives `since` from its own clock. A condition is keyed by its type and the subject
 * it is about (a GPU UUID, an instance id, a section name; empty for the whole node).
 *
 * @module
 */
import { type Clock, realClock } from "../clock.ts";

/** A condition status, as the wire spells it. */
export type ConditionStatus = "True" | "False" | "Unknown";

/** A condition as reported. */
export interface ReportedCondition {
  readonly type: string;
  readonly subject: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly age_ms: number;
}

interface _Held {
  type: string;
  subject: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  /** Monotonic milliseconds when status or reason last changed. */
  since: number;
}

const _key = (type: string, subject: string) => `${type}\u0000${subject}`;

/** The condition set. */
export class ConditionSet {
  readonly #held = new Map<string, _Held>();
  readonly #clock: Pick<Clock, "monotonic">;

  /** `clock`: the monotonic clock ages are read from (`core/clock.ts`). */
  constructor(clock: Pick<Clock, "monotonic"> = realClock) {
    this.#clock = clock;
  }

  /** Sets a condition; its age restarts only when its status or reason changes. */
  set(type: string, subject: string, status: ConditionStatus, reason: string, message = ""): void {
    const k = _key(type, subject);
    const prev = this.#held.get(k);
    if (prev && prev.status === status && prev.reason === reason) {
      prev.message = message;
      return;
    }
    this.#held.set(k, { type, subject, status, reason, message, since: this.#clock.monotonic() });
  }

  /** Removes a condition; true when there was one. */
  clear(type: string, subject = ""): boolean {
    return this.#held.delete(_key(type, subject));
  }

  /** Removes every condition of `type` (any subject), e.g. a GPU's XID conditions after a healthy reset. */
  clearType(type: string, subject?: string): void {
    for (const [k, c] of this.#held) {
      if (c.type === type && (subject === undefined || c.subject === subject)) this.#held.delete(k);
    }
  }

  has(type: string, subject = ""): boolean {
    return this.#held.has(_key(type, subject));
  }

  /** The conditions with their ages now, sorted by type then subject. */
  report(): ReportedCondition[] {
    const now = this.#clock.monotonic();
    return [...this.#held.values()]
      .sort((a, b) => a.type < b.type ? -1 : a.type > b.type ? 1 : a.subject < b.subject ? -1 : 1)
      .map((c) => ({
        type: c.type,
        subject: c.subject,
        status: c.status,
        reason: c.reason,
        message: c.message,
        age_ms: Math.max(0, Math.round(now - c.since)),
      }));
  }
}
