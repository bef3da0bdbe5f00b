/**
 * Test support for the Redfish client: a clock whose `sleep` moves time forward at once and records each wait, so a
 * task monitor's polling runs without waiting and its intervals can be asserted.
 *
 * @module
 */
import type { Clock } from "../../core/clock.ts";
import { realClock } from "../../core/clock.ts";

/** A clock for polling code: `sleep(ms)` adds `ms` to `monotonic()` and resolves at once. */
export function steppingClock(): Pick<Clock, "setTimer" | "sleep" | "monotonic"> & { slept: number[] } {
  let t = 0;
  const slept: number[] = [];
  return {
    slept,
    monotonic: () => t,
    sleep(ms) {
      slept.push(ms);
      t += ms;
      return Promise.resolve();
    },
    // Request timeouts stay real (a hang guard for a peer that stops answering), never asserted.
    setTimer: (ms, fn) => realClock.setTimer(ms, fn),
  };
}
