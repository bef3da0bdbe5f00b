/**
 * The server time mark (000 §The journal): the highest server time the daemon has seen, on `Welcome` and every
 * heartbeat. It only moves forward, and a `Welcome` whose `server_time` is more than 5 minutes before it is refused,
 * so a gateway cannot wind the daemon's clock back into an old worker certificate's window.
 *
 * @module
 */
import { ServerTimeRegressed } from "./errors.ts";

/** How far before the mark a `Welcome`'s `server_time` may be: 5 minutes. */
export const WELCOME_MAX_REGRESSION_MS = 5 * 60_000;

/** Where a server time was seen. */
export type ServerTimeSource = "welcome" | "heartbeat";

/**
 * The new mark after seeing `serverTime` from `source`: never lower than `mark`. Throws
 * {@link ServerTimeRegressed} for a `Welcome` more than 5 minutes before the mark (exactly 5 minutes is allowed).
 */
export function advanceMark(mark: number, serverTime: number, source: ServerTimeSource): number {
  if (!Number.isSafeInteger(serverTime) || serverTime < 0) {
    throw new RangeError(`server time ${serverTime} is not a non-negative integer of milliseconds`);
  }
  if (source === "welcome" && serverTime < mark - WELCOME_MAX_REGRESSION_MS) {
    throw new ServerTimeRegressed(serverTime, mark);
  }
  return Math.max(mark, serverTime);
}
