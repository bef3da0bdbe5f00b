/**
 * The worker's clock: the time and one-shot timers, injected so tests move time without sleeping.
 *
 * @module
 */

/** A monotonic clock in milliseconds, with timers. */
export interface Clock {
  now(): number;
  setTimer(ms: number, fn: () => void): { cancel(): void };
}

/** The real clock. */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimer(ms, fn) {
    const id = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(id) };
  },
};
