/**
 * The clock the transfer rules run on (000 §Instances: a 2-minute window moving less than 1 MiB ends a transfer, and
 * so do 6 hours in all): `now`, a repeating window and a one-shot cap. The real one is the process's timers; tests pass
 * {@link ManualTransferClock} and move time themselves, so no test of the rules waits for real time.
 *
 * @module
 */

/** Time for the transfer rules. Each scheduling call returns its cancel. */
export interface TransferClock {
  now(): number;
  every(ms: number, fn: () => void): () => void;
  after(ms: number, fn: () => void): () => void;
}

/** The process's clock and timers. */
export const REAL_TRANSFER_CLOCK: TransferClock = {
  now: () => Date.now(),
  every(ms, fn) {
    const t = setInterval(fn, ms);
    return () => clearInterval(t);
  },
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    return () => clearTimeout(t);
  },
};

/** A clock that moves only when {@link ManualTransferClock.advance} is called (tests). */
export class ManualTransferClock implements TransferClock {
  #t = 0;
  #next = 0;
  readonly #timers = new Map<number, { at: number; every: number | undefined; fn: () => void }>();

  now(): number {
    return this.#t;
  }

  every(ms: number, fn: () => void): () => void {
    return this.#add(ms, ms, fn);
  }

  after(ms: number, fn: () => void): () => void {
    return this.#add(ms, undefined, fn);
  }

  /** How many timers are scheduled (a test waits for a transfer to have started its watch). */
  get pending(): number {
    return this.#timers.size;
  }

  #add(ms: number, every: number | undefined, fn: () => void): () => void {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#t + ms, every, fn });
    return () => void this.#timers.delete(id);
  }

  /** Moves time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void {
    const end = this.#t + ms;
    while (true) {
      let due: [number, { at: number; every: number | undefined; fn: () => void }] | undefined;
      for (const e of this.#timers) if (e[1].at <= end && (!due || e[1].at < due[1].at)) due = e;
      if (!due) break;
      const [id, t] = due;
      this.#t = t.at;
      if (t.every === undefined) this.#timers.delete(id);
      else t.at += t.every;
      t.fn();
    }
    this.#t = end;
  }
}
