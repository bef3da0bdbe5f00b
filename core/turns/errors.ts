/**
 * The refusals of the turn protocol codec. Seed 001 names the messages and fields but no error strings, so these
 * reasons are bcd's own; each refusal names the offending message, field or key in its message text.
 *
 * @module
 */

/** Why a line of the turn protocol was refused. */
export type TurnsRefusalReason =
  /** A line longer than the cap; it is discarded up to its newline without being buffered whole. */
  | "line-too-long"
  /** The stream ended inside a line (no terminating newline). */
  | "truncated-line"
  /** The line is not valid UTF-8. */
  | "bad-utf8"
  /** The line is not JSON. */
  | "bad-json"
  /** The JSON value is not an object. */
  | "not-an-object"
  /** A key that could pollute prototypes (`__proto__`, `constructor`, `prototype`), at any depth. */
  | "forbidden-key"
  /** No `type` field, or a `type` that is not a string. */
  | "missing-type"
  /** A `type` naming no message of the protocol. */
  | "unknown-type"
  /** A message sent in the direction it must not travel (e.g. `Hello` from the host). */
  | "wrong-direction"
  /** A field of the message is absent (`in_flight` included: it is `null`, never omitted). */
  | "missing-field"
  /** A field the message does not have. */
  | "unknown-field"
  /** A field of the wrong type or out of range. */
  | "bad-field";

/** A refused line or message, carrying the reason and, where known, the message type. */
export class TurnsProtocolError extends Error {
  override name = "TurnsProtocolError";
  constructor(
    readonly reason: TurnsRefusalReason,
    message: string,
    readonly messageType?: string,
    options?: ErrorOptions,
  ) {
    super(`${reason}: ${message}`, options);
  }
}
