/**
 * The one clock bcd reads time through, injected wherever time decides something (deadlines, heartbeats, retries,
 * backoff, sweeps), so that tests move time by hand (`fixtures/clock/fake_clock.ts`) instead of sleeping.
 *
 * | member | what | real |
 * | --- | --- | --- |
 * | `now()` | wall-clock milliseconds since the Unix epoch: for times that are recorded, signed or sent | `Date.now()` |
 * | `monotonic()` | milliseconds that never go back, from an arbitrary origin: for durations and deadlines | `performance.now()` |
 * | `setTimer(ms, fn)` | runs `fn` once after `ms` (monotonic); `cancel()` before it fires stops it | `setTimeout` |
 * | `setRareTimer(ms, fn)` | the same, for a timer armed rarely (a connect, a handshake, a ticker) | {@link signalTimer} |
 * | `sleep(ms, signal?)` | resolves after `ms`, or at once when `signal` aborts (never rejects) | `setTimeout` |
 *
 * A timer longer than the platform's limit (2³¹−1 ms, about 24.8 days) is clamped to it rather than firing at once.
 * Code that only needs part of it takes `Pick<Clock, …>`, so a test's fake stays small.
 *
 * @module
 */

/** A timer that has been set; `cancel()` is harmless after it fired. */
export interface Timer {
  cancel(): void;
}

/** See the module doc. */
export interface Clock {
  now(): number;
  monotonic(): number;
  setTimer(ms: number, fn: () => void): Timer;
  setRareTimer(ms: number, fn: () => void): Timer;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The longest delay `setTimeout` takes before it overflows and fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The real clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer(ms, fn) {
    const id = setTimeout(fn, Math.max(0, Math.min(ms, MAX_TIMER_MS)));
    return { cancel: () => clearTimeout(id) };
  },
  setRareTimer: (ms, fn) => signalTimer(ms, fn),
  sleep(ms, signal) {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = () => {
        clearTimeout(id);
        resolve();
      };
      const id = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, Math.min(ms, MAX_TIMER_MS)));
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  },
};

/**
 * Runs `fn` once after `ms` on `AbortSignal.timeout` rather than `setTimeout`: in Deno 2.9 `setTimeout` is its Node
 * layer's, and the first call in a process loads that layer's timers, async hooks, error tables and `util.inspect`
 * (about 10 ms of CPU, a sixth of a bare `deno run`: issue 24), while `AbortSignal.timeout` runs on Deno's own timer
 * core. While armed, the abort listener holds the event loop open as a `setTimeout` does; `cancel()` removes it, and the
 * signal, which then holds nothing, expires unobserved at its deadline. A cancelled one thus stays in the timer list
 * until then and each arm costs more than a `setTimeout`'s: it is for the timers a start arms before its first `Hello`
 * and others armed as rarely (a connect, a handshake, a 1 s ticker), never one per request. `ms` is clamped as
 * {@link realClock}'s `setTimer` clamps it; a throw from `fn` is uncaught, as from a `setTimeout` callback.
 */
export function signalTimer(ms: number, fn: () => void): Timer {
  const signal = AbortSignal.timeout(Number.isFinite(ms) ? Math.max(0, Math.min(ms, MAX_TIMER_MS)) : 0);
  const fire = () => fn();
  signal.addEventListener("abort", fire, { once: true });
  return { cancel: () => signal.removeEventListener("abort", fire) };
}

/**
 * `clock`'s wall time in nanoseconds since the epoch (millisecond precision), the unit the guest turn protocol and
 * the migration log stamp events in. Their `now?: () => bigint` options stay a function: tests pass a counter that
 * moves on every call, which orders stamps without time; this is their one default.
 */
export function wallNanos(clock: Pick<Clock, "now"> = realClock): bigint {
  return BigInt(Math.floor(clock.now())) * 1_000_000n;
}

/** Runs `fn` every `ms` on `clock` (the next run is set after `fn` returns) until `cancel()`. */
export function repeat(clock: Pick<Clock, "setTimer">, ms: number, fn: () => void): Timer {
  let current: Timer | undefined;
  let stopped = false;
  const arm = () => {
    current = clock.setTimer(ms, () => {
      if (stopped) return;
      fn();
      if (!stopped) arm();
    });
  };
  arm();
  return {
    cancel: () => {
      stopped = true;
      current?.cancel();
    },
  };
}

/** Resolves after `ms` of real time, or at once when `signal` aborts (a self-terminating handler's wait for its end). */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
