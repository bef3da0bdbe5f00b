/**
 * The framing's two failures: a malformed message, which ends the stream, and a body that does not decode, which
 * leaves the stream intact at the start of the next message (seed 002 §Framing).
 *
 * @module
 */

/** Why the framing refused a message; each ends the stream. */
export type FramingReason =
  | "unknown-kind"
  | "oversized"
  | "wrong-direction"
  | "truncated";

/** A malformed message: the framing cannot find the next message after it, so the stream ends. */
export class FramingError extends Error {
  override name = "FramingError";
  /** The seed-style reason. */
  readonly reason: FramingReason;
  /** The kind byte of the offending header, when one was read. */
  readonly kind: number | undefined;
  constructor(reason: FramingReason, message: string, kind?: number, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
    this.kind = kind;
  }
}

/** A body whose encoding is wrong; the stream stays at the start of the next message. */
export class BodyError extends Error {
  override name = "BodyError";
  /** Which body failed to decode, such as `root-config` or `exec-start`. */
  readonly body: string;
  constructor(body: string, message: string, options?: ErrorOptions) {
    super(`${body}: ${message}`, options);
    this.body = body;
  }
}
