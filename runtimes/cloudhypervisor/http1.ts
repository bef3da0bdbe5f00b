/**
 * A small, bounded HTTP/1.1 codec for cloud-hypervisor's API socket: requests are encoded whole, responses (and, for
 * the fake VMM, requests) are decoded from a byte stream with a cap on the head and on the body checked before
 * anything past it is buffered. Only `Content-Length` framing: cloud-hypervisor's `micro_http` answers with it and
 * reads nothing else (no chunked encoding either way), so anything else is a {@link Http1Error}.
 *
 * Why our own codec rather than `fetch` through `Deno.createHttpClient` with a unix proxy: the request that hands the
 * VMM a tap's file descriptor must go out as raw bytes in one `sendmsg` with `SCM_RIGHTS` (see `fd_sender.ts`), which
 * no `fetch` can do, and one codec for both paths keeps them saying the same thing; a `fetch` response also gives no
 * bound on the head a peer sends. The VMM runs as the tenant's confined user, so its answers are untrusted input.
 *
 * @module
 */

/** A decoding failure: `reason` is `head-too-large`, `body-too-large`, `malformed` or `truncated`. */
export class Http1Error extends Error {
  override name = "Http1Error";
  constructor(readonly reason: "head-too-large" | "body-too-large" | "malformed" | "truncated", message: string) {
    super(message);
  }
}

/** A decoded message: the start line's parts, lowercased header names, and the body. */
export interface Http1Message {
  /** `[method, target, version]` for a request, `[version, status, reason]` for a response. */
  readonly start: readonly [string, string, string];
  readonly headers: ReadonlyMap<string, string>;
  readonly body: Uint8Array;
}

/** Limits of one decode. */
export interface Http1Limits {
  /** The most bytes of start line and headers (default 16 KiB). */
  readonly maxHead?: number;
  /** The most body bytes (default 4 MiB, cloud-hypervisor's own request limit). */
  readonly maxBody?: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: false });
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Encodes a request to the API at `target` (`/api/v1/vm.boot`); `body` is JSON text or absent. */
export function encodeRequest(method: "GET" | "PUT", target: string, body?: string): Uint8Array {
  if (!/^\/[\x21-\x7e]*$/.test(target)) throw new TypeError(`request target ${JSON.stringify(target)} is not a path`);
  const b = body === undefined ? new Uint8Array(0) : enc.encode(body);
  const head = `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n` +
    (body === undefined ? "" : "Content-Type: application/json\r\n") + `Content-Length: ${b.length}\r\n\r\n`;
  return _concat([enc.encode(head), b]);
}

const REASONS: Record<number, string> = {
  200: "OK",
  204: "No Content",
  400: "Bad Request",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  429: "Too Many Requests",
  500: "Internal Server Error",
};

/** Encodes a response (the fake VMM's side): `204` has no body, others carry `body` as JSON text. */
export function encodeResponse(status: number, body?: string): Uint8Array {
  const reason = REASONS[status] ?? "Unknown";
  const b = body === undefined ? new Uint8Array(0) : enc.encode(body);
  const head = `HTTP/1.1 ${status} ${reason}\r\nServer: Cloud Hypervisor API\r\nConnection: keep-alive\r\n` +
    (body === undefined ? "" : "Content-Type: application/json\r\n") + `Content-Length: ${b.length}\r\n\r\n`;
  return _concat([enc.encode(head), b]);
}

/**
 * Reads one message from `read` (which fills a buffer and answers the count, or `null` at the end), keeping at most
 * `maxHead` head bytes and `maxBody` body bytes. Bytes past the message are handed back as `rest` (a pipelined next
 * request), so the fake server can read a connection's requests one after the other.
 */
export async function readMessage(
  read: (buf: Uint8Array) => Promise<number | null>,
  limits: Http1Limits = {},
  carried: Uint8Array = new Uint8Array(0),
): Promise<{ message: Http1Message; rest: Uint8Array } | null> {
  const maxHead = limits.maxHead ?? 16 * 1024;
  const maxBody = limits.maxBody ?? 4 * 1024 * 1024;
  let have: Uint8Array = carried;
  let end = _headEnd(have);
  const chunk = new Uint8Array(16 * 1024);
  while (end < 0) {
    if (have.length > maxHead) throw new Http1Error("head-too-large", `the message head passed ${maxHead} bytes`);
    const n = await read(chunk);
    if (n === null) {
      if (have.length === 0) return null;
      throw new Http1Error("truncated", `the peer closed after ${have.length} bytes of a message head`);
    }
    have = _concat([have, chunk.subarray(0, n)]);
    end = _headEnd(have);
  }
  if (end > maxHead) throw new Http1Error("head-too-large", `the message head passed ${maxHead} bytes`);
  const lines = dec.decode(have.subarray(0, end)).split("\r\n");
  const startLine = lines.shift() ?? "";
  const start = startLine.split(" ");
  if (start.length < 3) throw new Http1Error("malformed", `start line ${JSON.stringify(startLine)} has no three parts`);
  const headers = new Map<string, string>();
  for (const l of lines) {
    const i = l.indexOf(":");
    const name = l.slice(0, i).toLowerCase();
    if (i <= 0 || !TOKEN.test(name)) throw new Http1Error("malformed", `header line ${JSON.stringify(l)} is malformed`);
    if (headers.has(name)) throw new Http1Error("malformed", `header ${name} appears twice`);
    headers.set(name, l.slice(i + 1).trim());
  }
  if (headers.has("transfer-encoding")) {
    throw new Http1Error("malformed", `transfer-encoding ${headers.get("transfer-encoding")} is not spoken here`);
  }
  const cl = headers.get("content-length") ?? "0";
  if (!/^\d{1,12}$/.test(cl)) throw new Http1Error("malformed", `content-length ${JSON.stringify(cl)} is not a count`);
  const len = Number(cl);
  if (len > maxBody) throw new Http1Error("body-too-large", `a body of ${len} bytes is more than ${maxBody}`);
  const bodyStart = end + 4;
  const body = new Uint8Array(len);
  let got = Math.min(len, have.length - bodyStart);
  body.set(have.subarray(bodyStart, bodyStart + got));
  const rest = have.slice(bodyStart + got);
  while (got < len) {
    const n = await read(body.subarray(got));
    if (n === null) throw new Http1Error("truncated", `the peer closed after ${got} of ${len} body bytes`);
    got += n;
  }
  const [a = "", b = "", ...c] = start;
  return { message: { start: [a, b, c.join(" ")], headers, body }, rest };
}

function _headEnd(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  }
  return -1;
}

function _concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
