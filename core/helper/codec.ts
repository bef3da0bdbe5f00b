/**
 * Encoding and decoding the helper protocol's lines ({@link ./protocol.ts}). Decoders take one line without its
 * newline, already bounded by the line reader, and refuse with a {@link HelperError} that names what is wrong:
 * a request's top-level fields are exactly `id`, `op` and `args`; its arguments are checked by {@link checkArgs}.
 *
 * @module
 */
import { checkArgs } from "./args.ts";
import { HELPER_ERROR_CODES, HelperError, type HelperErrorCode } from "./errors.ts";
import {
  type HelperAnswer,
  type HelperArgs,
  type HelperOp,
  type HelperRequest,
  type HelperResults,
  isHelperOp,
} from "./protocol.ts";

const _REQUEST_FIELDS = ["id", "op", "args"];

/** The id of a request line as far as it can be read (for a refusal's answer), else `null`. */
function _idOf(v: unknown): number | null {
  if (typeof v !== "object" || v === null) return null;
  const id = (v as { id?: unknown }).id;
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : null;
}

/** A request line refused: the id it carried (or `null`) and why. */
export class RequestRefused extends Error {
  override name = "RequestRefused";
  constructor(readonly id: number | null, readonly error: HelperError) {
    super(error.message, { cause: error });
  }
}

/** Encodes a request line (with its newline). */
export function encodeRequest<O extends HelperOp>(id: number, op: O, args: HelperArgs[O]): string {
  return JSON.stringify({ id, op, args }) + "\n";
}

/**
 * Decodes and checks one request line. Throws {@link RequestRefused} carrying the request's id when it could be read,
 * so the refusal can be answered to the right caller. With `allowed` (the ops of the role the helper serves), an op of
 * the protocol outside it is refused `not-allowed` before its arguments are looked at.
 */
export function decodeRequest(line: string, allowed?: ReadonlySet<HelperOp>): HelperRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (e) {
    throw new RequestRefused(null, new HelperError("malformed", `request is not JSON: ${(e as Error).message}`));
  }
  const id = _idOf(raw);
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new RequestRefused(null, new HelperError("malformed", "request is not a JSON object"));
  }
  const o = raw as Record<string, unknown>;
  if (id === null) throw new RequestRefused(null, new HelperError("malformed", "request id is not an integer ≥ 0"));
  for (const k of Object.keys(o)) {
    if (!_REQUEST_FIELDS.includes(k)) {
      throw new RequestRefused(id, new HelperError("unknown-field", `request: unknown field ${k}`));
    }
  }
  if (typeof o.op !== "string") {
    throw new RequestRefused(id, new HelperError("malformed", "request op is not a string"));
  }
  const op = o.op;
  if (!isHelperOp(op)) {
    throw new RequestRefused(id, new HelperError("unknown-op", `unknown op ${JSON.stringify(op.slice(0, 64))}`));
  }
  if (allowed !== undefined && !allowed.has(op)) {
    throw new RequestRefused(id, new HelperError("not-allowed", `${op} is not an op of the role this helper serves`));
  }
  try {
    return { id, op, args: checkArgs(op, o.args) } as HelperRequest;
  } catch (e) {
    if (e instanceof HelperError) throw new RequestRefused(id, e);
    throw e;
  }
}

/** Encodes a successful answer line. */
export function encodeResult(id: number, result: unknown): string {
  return JSON.stringify({ id, ok: true, result: result ?? {} }) + "\n";
}

/** Encodes a refusal or failure line; the message goes without its `helper: ` prefix. */
export function encodeError(id: number | null, err: HelperError): string {
  return JSON.stringify({ id, ok: false, error: { code: err.code, message: err.detail } }) + "\n";
}

/** Decodes an answer line; throws {@link HelperError} `malformed` for one that is not an answer. */
export function decodeAnswer(line: string): HelperAnswer {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (e) {
    throw new HelperError("malformed", `answer is not JSON: ${(e as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new HelperError("malformed", "answer is not a JSON object");
  }
  const o = raw as Record<string, unknown>;
  const id = o.id === null ? null : _idOf(o);
  if (o.ok === true) {
    if (id === null) throw new HelperError("malformed", "answer has no id");
    if (typeof o.result !== "object" || o.result === null) throw new HelperError("malformed", "answer has no result");
    return { id, ok: true, result: o.result };
  }
  if (o.ok !== false) throw new HelperError("malformed", "answer has no ok");
  const e = o.error as { code?: unknown; message?: unknown } | undefined;
  if (typeof e !== "object" || e === null || typeof e.code !== "string" || typeof e.message !== "string") {
    throw new HelperError("malformed", "refusal has no error code and message");
  }
  if (!(HELPER_ERROR_CODES as readonly string[]).includes(e.code)) {
    throw new HelperError("malformed", `refusal code ${JSON.stringify(e.code.slice(0, 64))} is unknown`);
  }
  return { id, ok: false, error: { code: e.code, message: e.message } };
}

/** The error an answer carries, as the node throws it. */
export function answerError(a: { error: { code: string; message: string } }): HelperError {
  return new HelperError(a.error.code as HelperErrorCode, a.error.message);
}

/** Type helper: an op's result, for callers that checked the answer's shape. */
export type ResultOf<O extends HelperOp> = HelperResults[O];
