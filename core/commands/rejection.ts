/**
 * Why a delivered command is refused (the seed's reasons of the acceptance checks; the checks return them as a
 * verdict) and the typed failures a handler throws (`FAILED` with `invalid-payload` or a kind-specific code).
 *
 * @module
 */

/** Terminal refusals: journaled, so a duplicate delivery gets the same answer. */
export type TerminalRejectReason =
  | "UNSUPPORTED"
  | "STALE_GENERATION"
  | "EXPIRED"
  | "BAD_SIGNATURE"
  | "BATCH_UNAPPROVED"
  | "UNBATCHED_LIMIT";

/** Every reason a command can be refused with; `BUSY` is not terminal and never journaled. */
export type RejectReason = TerminalRejectReason | "BUSY";

/** The terminal reasons, in the seed's check order. */
export const TERMINAL_REJECT_REASONS: readonly TerminalRejectReason[] = [
  "UNSUPPORTED",
  "STALE_GENERATION",
  "EXPIRED",
  "BAD_SIGNATURE",
  "BATCH_UNAPPROVED",
  "UNBATCHED_LIMIT",
];

/** A kind's payload that does not decode or does not make sense: `FAILED` with `invalid-payload`. */
export class InvalidPayload extends Error {
  override name = "InvalidPayload";
  readonly code = "invalid-payload";
}

/**
 * Thrown by a self-terminating handler when the daemon stops while it waits for its own end: no result is journaled
 * or sent; the entry stays `running` and the next process settles it (recovery, or the redelivery of a retry-safe
 * kind), exactly as after a crash at that point.
 */
export class LeftForRecovery extends Error {
  override name = "LeftForRecovery";
}

/** A kind-specific failure with its own code (`gpu-busy`, `upload-failed`, ...). */
export class CommandFailed extends Error {
  override name = "CommandFailed";
  constructor(readonly code: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
