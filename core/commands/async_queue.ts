/**
 * A FIFO queue whose `take` waits (abortably) for an item, and a counting semaphore built on it: the plumbing of the
 * lanes' fixed worker pools.
 *
 * @module
 */

/** Thrown into a `take` whose signal aborted. */
export class TakeAborted extends Error {
  override name = "TakeAborted";
}

/** An unbounded FIFO with waiting consumers. */
export class AsyncQueue<T> {
  readonly #items: T[] = [];
  readonly #takers: { resolve: (v: T) => void; reject: (e: Error) => void }[] = [];
  /** Set by {@link close}: a take that finds the queue empty rejects with it instead of waiting. */
  #closed: Error | undefined;

  /** The number of items waiting. */
  get length(): number {
    return this.#items.length;
  }

  /** Adds an item, handing it straight to the oldest waiting taker. */
  put(item: T): void {
    const t = this.#takers.shift();
    if (t !== undefined) t.resolve(item);
    else this.#items.push(item);
  }

  /** Removes and returns the first item matching `pred`, if any is still queued. */
  remove(pred: (item: T) => boolean): T | undefined {
    const i = this.#items.findIndex(pred);
    return i < 0 ? undefined : this.#items.splice(i, 1)[0];
  }

  /**
   * The oldest item, waiting for one when empty; rejects with {@link TakeAborted} when `signal` aborts, and with the
   * reason given to {@link close} once the queue is closed and empty.
   */
  take(signal?: AbortSignal): Promise<T> {
    if (this.#items.length > 0) return Promise.resolve(this.#items.shift()!);
    if (this.#closed !== undefined) return Promise.reject(this.#closed);
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) return reject(new TakeAborted("aborted"));
      const onAbort = () => {
        const i = this.#takers.indexOf(t);
        if (i >= 0) this.#takers.splice(i, 1);
        reject(new TakeAborted("aborted"));
      };
      const t = {
        resolve: (v: T) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(v);
        },
        reject,
      };
      this.#takers.push(t);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Rejects every waiting taker, and every later take that finds the queue empty (shutdown). */
  close(reason: Error): void {
    this.#closed = reason;
    for (const t of this.#takers.splice(0)) t.reject(reason);
  }
}
