/**
 * Privilege separation (000 §privilege separation): the protocol between an unprivileged agent (`bcd node`, `bcd site`,
 * `bcd ramdisk`) and the root `bcd helper` over a unix stream socket. NDJSON requests `{id, op, args}` and answers
 * `{id, ok, result | error}` ({@link ./protocol.ts}); the default-deny argument table every op is checked against
 * before anything runs ({@link ./args.ts}); the ops a helper answers for the role it serves ({@link ./roles.ts}); the
 * line codec ({@link ./codec.ts}); a bounded line reader ({@link ../bounded_lines.ts}); and {@link HelperError}, whose
 * message starts `helper: ` as the seed's action errors do. The argument table and the request decoder that runs it
 * (`./request.ts`) are the server's alone and not exported here: every agent imports this module, and they would
 * load at its start (issue 24).
 *
 * The agent never sends a path: a file is a kind (`cdi`, `allocation-env`) and an allocation id, a slice is a
 * `bcd-alloc-<allocation id>.slice` name, a GPU is its UUID, and the helper builds every path from its own config.
 * The client and the server, which do I/O, live in `runtimes/helper/`.
 *
 * @module
 */
export { answerError, decodeAnswer, encodeError, encodeRequest, encodeResult, type ResultOf } from "./codec.ts";
export { HELPER_ERROR_CODES, HelperError, type HelperErrorCode } from "./errors.ts";
export { boundedLines, type LineEvent, type LineReaderState } from "../bounded_lines.ts";
export { loggedArgs } from "./log_args.ts";
export { DEFAULT_HELPER_ROLE, HELPER_OPS_BY_ROLE, HELPER_ROLES, isHelperRole, opsOfRole } from "./roles.ts";
export {
  type CdiWriteArgs,
  DEFAULT_HELPER_SOCKET,
  type EnvWriteArgs,
  FILE_KINDS,
  type FileKind,
  HELPER_OPS,
  HELPER_PROTOCOL_VERSION,
  type HelperAnswer,
  type HelperArgs,
  type HelperOp,
  type HelperRequest,
  type HelperResults,
  isHelperOp,
  MAX_ANSWER_LINE,
  MAX_REQUEST_LINE,
  type WireHoldDevice,
} from "./protocol.ts";
