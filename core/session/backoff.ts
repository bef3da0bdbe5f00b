/**
 * Reconnect delays: exponential with full jitter, so a gateway restart does not bring every node back in the same
 * second.
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

/** Jittered exponential backoff: attempt n waits a uniform random time in [ceiling/2, ceiling], ceiling = base·2ⁿ. */
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
