/**
 * HTTP/1.1 framing for the transports that hold their own socket (`socket_transport.ts`): a request head with its
 * `Content-Length`, and an answer parsed with bounds (head ≤ 64 KiB, body ≤ the request's bound, `Content-Length` or
 * chunked, or up to the close).
 *
 * @module
 */
import { RedfishError } from "./errors.ts";
import { concatBytes, type TransportRequest, type TransportResponse } from "./transport.ts";

/** The largest header block read. */
export const MAX_HEAD = 64 * 1024;

/** The request line and headers of `r`, with `Connection: close` and the body's `Content-Length`. */
export function requestHead(r: TransportRequest, bodyLength: number): string {
  const lines = [`${r.method} ${r.url.pathname}${r.url.search} HTTP/1.1`, `Host: ${r.url.host}`, "Connection: close"];
  for (const [k, v] of Object.entries(r.headers)) {
    if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) throw new RangeError(`header ${JSON.stringify(k)} holds a line break`);
    lines.push(`${k}: ${v}`);
  }
  lines.push(`Content-Length: ${bodyLength}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

/**
 * Parses an HTTP/1.1 answer from `buf`: `undefined` while it is incomplete (at `closed`, what is there is the body
 * unless a length or chunking says more is due). Throws `bmc-bad-response` for a malformed or oversized one.
 */
export function parseHttp1(
  buf: Uint8Array,
  maxBytes: number,
  what: string,
  closed: boolean,
): TransportResponse | undefined {
  const end = _indexOf(buf, CRLFCRLF, 0);
  if (end < 0) {
    if (buf.length > MAX_HEAD) {
      throw new RedfishError("bmc-bad-response", `${what}: a header block past ${MAX_HEAD} bytes`);
    }
    if (closed) throw new RedfishError("bmc-bad-response", `${what}: the connection closed before the headers`);
    return undefined;
  }
  const head = new TextDecoder().decode(buf.subarray(0, end)).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? "");
  if (!m) throw new RedfishError("bmc-bad-response", `${what}: not an HTTP/1.1 status line: ${head[0]?.slice(0, 80)}`);
  const headers = new Map<string, string>();
  for (const line of head.slice(1)) {
    const c = line.indexOf(":");
    if (c <= 0) throw new RedfishError("bmc-bad-response", `${what}: a malformed header line`);
    headers.set(line.slice(0, c).trim().toLowerCase(), line.slice(c + 1).trim());
  }
  const status = Number(m[1]);
  const rest = buf.subarray(end + 4);
  const te = headers.get("transfer-encoding")?.toLowerCase();
  if (te === "chunked") {
    const body = _dechunk(rest, maxBytes, what);
    if (body) return { status, headers, body };
    if (closed) throw new RedfishError("bmc-bad-response", `${what}: the connection closed mid-chunk`);
    return undefined;
  }
  const cl = headers.get("content-length");
  if (cl !== undefined) {
    if (!/^\d{1,12}$/.test(cl)) throw new RedfishError("bmc-bad-response", `${what}: Content-Length ${cl}`);
    const n = Number(cl);
    if (n > maxBytes) throw new RedfishError("bmc-bad-response", `${what}: the answer passed ${maxBytes} bytes`);
    if (rest.length >= n) return { status, headers, body: rest.slice(0, n) };
    if (closed) throw new RedfishError("bmc-bad-response", `${what}: the connection closed mid-body`);
    return undefined;
  }
  if (status === 204 || status === 304) return { status, headers, body: new Uint8Array() };
  if (rest.length > maxBytes) {
    throw new RedfishError("bmc-bad-response", `${what}: the answer passed ${maxBytes} bytes`);
  }
  return closed ? { status, headers, body: rest.slice() } : undefined;
}

const CRLFCRLF = Uint8Array.of(13, 10, 13, 10);
const CRLF = Uint8Array.of(13, 10);

function _dechunk(buf: Uint8Array, maxBytes: number, what: string): Uint8Array | undefined {
  const parts: Uint8Array[] = [];
  let at = 0;
  let n = 0;
  for (;;) {
    const eol = _indexOf(buf, CRLF, at);
    if (eol < 0) return undefined;
    const sizeText = new TextDecoder().decode(buf.subarray(at, eol)).split(";")[0]!.trim();
    if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText)) throw new RedfishError("bmc-bad-response", `${what}: a bad chunk size`);
    const size = parseInt(sizeText, 16);
    if (size === 0) return concatBytes(parts, n);
    n += size;
    if (n > maxBytes) throw new RedfishError("bmc-bad-response", `${what}: the answer passed ${maxBytes} bytes`);
    const start = eol + 2;
    if (buf.length < start + size + 2) return undefined;
    parts.push(buf.subarray(start, start + size));
    at = start + size + 2;
  }
}

function _indexOf(buf: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= buf.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (buf[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}
