/**
 * The helper's error: a refusal or a failure of one operation, with a code callers branch on and a message that
 * starts `helper: ` (000 §Device assignments: "a refused or failed operation is an error of the action that asked
 * for it (`helper: …`)", retryable like a failed direct write).
 *
 * @module
 */

/**
 * Why the helper did not do what was asked:
 *
 * | code               | meaning                                                                  |
 * | ------------------ | ------------------------------------------------------------------------ |
 * | `malformed`        | the line is not a JSON object with an integer `id` and a string `op`     |
 * | `line-too-long`    | the line passed the cap; the connection is closed                        |
 * | `unknown-op`       | the op is not one of the helper's                                        |
 * | `not-allowed`      | the op is the protocol's but not of the role this helper serves (`[helper] role`) |
 * | `unknown-field`    | the request or its `args` carry a field the op does not take (named)     |
 * | `invalid-argument` | an argument is refused (named, with its value)                           |
 * | `busy`             | too many requests in flight on this connection, or connections (none idle) |
 * | `closing`          | (id `null`) the helper ends this connection (idle, evicted for a newer peer, a line not finished in time); every request it had read is answered before this line, so one still unanswered was never read and may be sent again |
 * | `over-limit`       | a volume limit of the helper would be passed (how many hold files it keeps) |
 * | `failed`           | the operation ran and failed; the message is the runtime's               |
 * | `unsupported`      | the operation cannot be done on this host and no retry fixes it (a huge page size it lacks) |
 * | `unreachable`      | (node side) the socket cannot be reached, or the connection dropped      |
 * | `timeout`          | (node side) no answer in time                                            |
 */
export type HelperErrorCode =
  | "malformed"
  | "line-too-long"
  | "unknown-op"
  | "not-allowed"
  | "unknown-field"
  | "invalid-argument"
  | "busy"
  | "closing"
  | "over-limit"
  | "failed"
  | "unsupported"
  | "unreachable"
  | "timeout";

/** Every code, for decoders. */
export const HELPER_ERROR_CODES: readonly HelperErrorCode[] = [
  "malformed",
  "line-too-long",
  "unknown-op",
  "not-allowed",
  "unknown-field",
  "invalid-argument",
  "busy",
  "closing",
  "over-limit",
  "failed",
  "unsupported",
  "unreachable",
  "timeout",
];

/** A refusal or failure of the helper; `detail` is the message without the `helper: ` prefix. */
export class HelperError extends Error {
  override name = "HelperError";
  readonly code: HelperErrorCode;
  readonly detail: string;
  constructor(code: HelperErrorCode, detail: string, options?: ErrorOptions) {
    super(`helper: ${detail}`, options);
    this.code = code;
    this.detail = detail;
  }
}
