/**
 * The Redfish client's failures, each a `CommandFailed` whose code a `bmc.*` command fails with, so a handler lets
 * them through unchanged. The seed names no BMC codes; these are ours, one per thing an operator does differently:
 *
 * | code | when |
 * | --- | --- |
 * | `bmc-unreachable` | no TCP connection, a reset, a redirect (a BMC answers where it is asked) |
 * | `bmc-tls` | the certificate does not chain to the pinned CA, or its SHA-256 is not the pinned one |
 * | `bmc-timeout` | no full answer within the request's time, or a task or state that did not settle in its bound |
 * | `bmc-auth` | 401 (wrong credentials), or a session the BMC did not hand out |
 * | `bmc-refused` | any other 4xx: the BMC refused the request (its `@Message.ExtendedInfo` in the message) |
 * | `bmc-etag-mismatch` | 412 on a PATCH with `If-Match`: the resource changed since it was read |
 * | `bmc-error` | 5xx, or a task that ended `Exception`/`Killed`/`Cancelled` |
 * | `bmc-bad-response` | a body past the size bound, not JSON, or missing what the Redfish schema promises |
 *
 * @module
 */
import { CommandFailed } from "../../core/commands/rejection.ts";

/** The codes of {@link RedfishError}. */
export type RedfishErrorCode =
  | "bmc-unreachable"
  | "bmc-tls"
  | "bmc-timeout"
  | "bmc-auth"
  | "bmc-refused"
  | "bmc-etag-mismatch"
  | "bmc-error"
  | "bmc-bad-response";

/** One `@Message.ExtendedInfo` entry, as the BMC wrote it. */
export interface RedfishMessage {
  readonly messageId: string;
  readonly message: string;
  readonly resolution?: string;
  readonly severity?: string;
}

/** A Redfish request that failed; `status` is the HTTP status when the BMC answered. */
export class RedfishError extends CommandFailed {
  override name = "RedfishError";
  constructor(
    override readonly code: RedfishErrorCode,
    message: string,
    readonly details: { readonly status?: number; readonly messages?: readonly RedfishMessage[] } = {},
    options?: ErrorOptions,
  ) {
    super(code, message, options);
  }
}

const MAX_MESSAGES = 8;
const MAX_TEXT = 512;

/**
 * Reads a Redfish error body (`{"error": {"code", "message", "@Message.ExtendedInfo": [...]}}`, or a bare
 * `@Message.ExtendedInfo` on the resource) into its messages: at most 8, each text cut at 512 characters. Anything
 * else gives none.
 */
export function extendedInfo(body: unknown): RedfishMessage[] {
  if (!_isObject(body)) return [];
  const err = _isObject(body.error) ? body.error : body;
  const out: RedfishMessage[] = [];
  const list = err["@Message.ExtendedInfo"];
  if (Array.isArray(list)) {
    for (const m of list.slice(0, MAX_MESSAGES)) {
      if (!_isObject(m)) continue;
      out.push({
        messageId: _text(m.MessageId),
        message: _text(m.Message),
        ...(typeof m.Resolution === "string" ? { resolution: _text(m.Resolution) } : {}),
        ...(typeof m.Severity === "string" ? { severity: _text(m.Severity) } : {}),
      });
    }
  }
  if (out.length === 0 && (typeof err.message === "string" || typeof err.code === "string")) {
    out.push({ messageId: _text(err.code), message: _text(err.message) });
  }
  return out;
}

/** The error for a non-2xx answer: the code by status, the message naming the request and the BMC's messages. */
export function statusError(method: string, path: string, status: number, body: unknown): RedfishError {
  const messages = extendedInfo(body);
  const said = messages.length === 0
    ? ""
    : ": " + messages.map((m) => `${m.messageId || "message"}: ${m.message}${m.resolution ? ` (${m.resolution})` : ""}`)
      .join("; ");
  const code: RedfishErrorCode = status === 401
    ? "bmc-auth"
    : status === 412
    ? "bmc-etag-mismatch"
    : status >= 500
    ? "bmc-error"
    : "bmc-refused";
  return new RedfishError(code, `${method} ${path} answered ${status}${said}`, { status, messages });
}

function _text(v: unknown): string {
  return typeof v === "string" ? v.slice(0, MAX_TEXT) : "";
}

function _isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
