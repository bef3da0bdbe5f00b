/**
 * The server time mark (000 §The journal): the highest server time the daemon has seen, on `Welcome` and every
 * heartbeat. It only moves forward, and a `Welcome` whose `server_time` is more than 5 minutes before it is refused,
 * so a gateway cannot wind the daemon's clock back into an old worker certificate's window.
 *
 * Bounds bcd adds (issue 28, item 4; the seed bounds only the way back): a server time more than
 * {@link MAX_FORWARD_SKEW_MS} (24 hours) ahead of the later of the mark and this host's clock is refused from any
 * source, as is one past {@link MAX_SERVER_TIME_MS} (the end of year 9999, where dates stop printing), so one
 * `Welcome` dated 2200 cannot move the mark for good. A host whose clock is more than a day behind the control
 * plane therefore needs its clock set before its first session. A mark that is wrong anyway (set by an older
 * build, or by hand) is reset by the operator, with the daemon stopped, with
 * `bcd-node journal reset-time-mark --data-dir DIR`: it sets the mark (journal and `identity.json`) to this host's
 * clock, and the next `Welcome` moves it forward again.
 *
 * @module
 */
import { ServerTimeAhead, ServerTimeRegressed } from "./errors.ts";

/** How far ahead of the later of the mark and this host's clock a server time may be: 24 hours. */
export const MAX_FORWARD_SKEW_MS = 24 * 60 * 60_000;

/** A mark that moved this far past the written one is written (journal and identity.json); see `observeServerTime`. */
export const MARK_PERSIST_STEP_MS = 60_000;

/** The latest server time taken at all: 9999-12-31T23:59:59.999Z. */
export const MAX_SERVER_TIME_MS = 253_402_300_799_999;

/** How far before the mark a `Welcome`'s `server_time` may be: 5 minutes. */
export const WELCOME_MAX_REGRESSION_MS = 5 * 60_000;

/** Where a server time was seen. */
export type ServerTimeSource = "welcome" | "heartbeat";

/**
 * The new mark after seeing `serverTime` from `source` while this host's clock reads `localNow`: never lower than
 * `mark`. Throws {@link ServerTimeRegressed} for a `Welcome` more than 5 minutes before the mark (exactly 5 minutes
 * is allowed), and {@link ServerTimeAhead} for a time past {@link forwardLimit} from any source.
 */
export function advanceMark(mark: number, serverTime: number, source: ServerTimeSource, localNow: number): number {
  if (!Number.isSafeInteger(serverTime) || serverTime < 0) {
    throw new ServerTimeAhead(serverTime, forwardLimit(mark, localNow), source);
  }
  const limit = forwardLimit(mark, localNow);
  if (serverTime > limit) throw new ServerTimeAhead(serverTime, limit, source);
  if (source === "welcome" && serverTime < mark - WELCOME_MAX_REGRESSION_MS) {
    throw new ServerTimeRegressed(serverTime, mark);
  }
  return Math.max(mark, serverTime);
}

/** The latest server time taken with this mark and host clock: 24 hours past the later of the two, at most year 9999. */
export function forwardLimit(mark: number, localNow: number): number {
  return Math.min(MAX_SERVER_TIME_MS, Math.max(mark, localNow) + MAX_FORWARD_SKEW_MS);
}
