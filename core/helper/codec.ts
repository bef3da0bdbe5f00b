/**
 * Encoding the helper protocol's lines ({@link ./protocol.ts}) and decoding its answers: what the agent's client runs.
 * Decoders take one line without its newline, already bounded by the line reader, and refuse with a {@link HelperError}
 * that names what is wrong. Decoding requests, which checks their arguments, is the server's (`request.ts`): apart, so
 * that an agent does not load the argument table at start (issue 24).
 *
 * @module
 */
import { HELPER_ERROR_CODES, HelperError, type HelperErrorCode } from "./errors.ts";
import { type HelperAnswer, type HelperArgs, type HelperOp, type HelperResults } from "./protocol.ts";

/** The id of a request line as far as it can be read (for a refusal's answer), else `null`. */
export function requestIdOf(v: unknown): number | null {
  if (typeof v !== "object" || v === null) return null;
  const id = (v as { id?: unknown }).id;
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : null;
}

/** Encodes a request line (with its newline). */
export function encodeRequest<O extends HelperOp>(id: number, op: O, args: HelperArgs[O]): string {
  return JSON.stringify({ id, op, args }) + "\n";
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
  const id = o.id === null ? null : requestIdOf(o);
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
