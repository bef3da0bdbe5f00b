/**
 * The generations the worker remembers (seed 002 §"The worker's executions"): the latest generation the host
 * started of up to {@link MAX_HISTORY} IDs, refused starts included; beyond that it forgets the ID it heard of
 * first.
 *
 * @module
 */
import { MAX_HISTORY } from "./exec_limits.ts";

/** What a host message's key is, against the history. */
export type Standing = "new" | "later" | "current" | "stale";

/** IDs and their latest started generation, in the order first heard of. */
export class ExecHistory {
  readonly #latest = new Map<bigint, bigint>();
  constructor(readonly capacity: number = MAX_HISTORY) {}

  /** Where `generation` stands for `id`. */
  standing(id: bigint, generation: bigint): Standing {
    const g = this.#latest.get(id);
    if (g === undefined) return "new";
    if (generation > g) return "later";
    return generation === g ? "current" : "stale";
  }

  /** Records a start of `generation` (accepted or refused). */
  record(id: bigint, generation: bigint): void {
    if (!this.#latest.has(id) && this.#latest.size >= this.capacity) {
      const first = this.#latest.keys().next().value as bigint;
      this.#latest.delete(first);
    }
    this.#latest.set(id, generation);
  }

  get size(): number {
    return this.#latest.size;
  }
}
