/**
 * Reconnect delays: exponential with **equal jitter** (half the ceiling fixed, half random), so a gateway restart
 * does not bring every node back in the same second, and no node comes back sooner than half its ceiling.
 *
 * Equal, not full, jitter (a uniform wait in [0, ceiling]) on purpose: full jitter spreads reconnects a little wider
 * but lets a node retry at once after a failure, so a gateway that refuses every session would be hit in a tight
 * loop by the unlucky draws; the floor keeps every node's retry rate bounded by its ceiling.
 *
 * @module
 */

/** Options for {@link Backoff}. */
export interface BackoffOptions {
  /** The first delay's ceiling, in milliseconds (default 500). */
  readonly baseMs?: number;
  /** The largest ceiling, in milliseconds (default 60 s). */
  readonly maxMs?: number;
  /** A uniform random number in [0, 1) (injectable for tests). */
  readonly random?: () => number;
}

/**
 * Exponential backoff with equal jitter: attempt n waits a uniform random time in [ceiling/2, ceiling], where
 * ceiling = min(max, base·2ⁿ).
 */
export class Backoff {
  #attempt = 0;
  readonly #base: number;
  readonly #max: number;
  readonly #random: () => number;

  constructor(opts: BackoffOptions = {}) {
    this.#base = opts.baseMs ?? 500;
    this.#max = opts.maxMs ?? 60_000;
    this.#random = opts.random ?? Math.random;
    if (!(this.#base > 0) || !(this.#max >= this.#base)) throw new RangeError("backoff: need 0 < baseMs <= maxMs");
  }

  /** The next delay, in milliseconds; each call doubles the ceiling up to the maximum. */
  next(): number {
    const ceiling = Math.min(this.#max, this.#base * 2 ** Math.min(this.#attempt, 30));
    this.#attempt++;
    return Math.round(ceiling / 2 + this.#random() * ceiling / 2);
  }

  /** After a session that reached `Welcome`: start again from the base. */
  reset(): void {
    this.#attempt = 0;
  }

  get attempts(): number {
    return this.#attempt;
  }
}
