/**
 * Decoding the helper's request lines, on the server: a request's top-level fields are exactly `id`, `op` and `args`,
 * and its arguments are checked by {@link checkArgs} before anything runs. Apart from `codec.ts` so that an agent,
 * which only encodes requests, does not load the argument table (issue 24).
 *
 * @module
 */
import { checkArgs } from "./args.ts";
import { HelperError } from "./errors.ts";
import { type HelperOp, type HelperRequest, isHelperOp } from "./protocol.ts";
import { requestIdOf } from "./codec.ts";

const _REQUEST_FIELDS = ["id", "op", "args"];

/** A request line refused: the id it carried (or `null`) and why. */
export class RequestRefused extends Error {
  override name = "RequestRefused";
  constructor(readonly id: number | null, readonly error: HelperError) {
    super(error.message, { cause: error });
  }
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
  const id = requestIdOf(raw);
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
