/**
 * The lock the helper holds around writes, shared by the ops that write (`dispatch.ts`, `access_ops.ts`).
 *
 * @module
 */
import { settled } from "../../core/settled.ts";

/** A one-at-a-time lock (a promise chain). */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  /** Runs `f` once every earlier holder has finished. */
  run<T>(f: () => Promise<T>): Promise<T> {
    const next = this.#tail.then(f, f);
    this.#tail = settled(next);
    return next;
  }
}
