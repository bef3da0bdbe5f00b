/**
 * A BMC pinned by the SHA-256 of its leaf certificate (BMCs mostly carry self-signed ones, often for a name that is
 * not the one they are reached by). Deno's `fetch` cannot show the peer's certificate nor skip its own chain check for
 * one client, so this transport does the TLS handshake itself with `node:tls` (`rejectUnauthorized: false`: no chain
 * or name check), compares the SHA-256 of the leaf's DER (`getPeerCertificate().raw`) with the pin in constant time,
 * and only then writes the request, credentials included, on that connection: a peer with another certificate never
 * sees a byte of it. The request is HTTP/1.1 with `Connection: close`; the answer is read with bounds (head ≤ 64 KiB,
 * body ≤ the request's bound, `Content-Length` or chunked, or up to the close).
 *
 * @module
 */
import tls from "node:tls";
import { createHash, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../core/clock.ts";
import { RedfishError } from "./errors.ts";
import type { RedfishTransport, TransportRequest, TransportResponse } from "./transport.ts";

const MAX_HEAD = 64 * 1024;

/** Lowercase hex SHA-256 of a DER certificate. */
export function certSha256(der: Uint8Array): string {
  return createHash("sha256").update(der).digest("hex");
}

/** Requests over a TLS connection whose leaf certificate has the pinned SHA-256. */
export class PinnedTlsTransport implements RedfishTransport {
  readonly #pin: Uint8Array;
  readonly #clock: Pick<Clock, "setTimer">;

  constructor(o: { certSha256: string; clock: Pick<Clock, "setTimer"> }) {
    if (!/^[0-9a-f]{64}$/.test(o.certSha256)) {
      throw new RangeError(`cert_sha256 ${JSON.stringify(o.certSha256)} is not 64 lowercase hex digits`);
    }
    this.#pin = Uint8Array.from(o.certSha256.match(/../g)!.map((h) => parseInt(h, 16)));
    this.#clock = o.clock;
  }

  request(r: TransportRequest): Promise<TransportResponse> {
    const what = `${r.method} ${r.url.pathname}`;
    if (r.url.protocol !== "https:") throw new RangeError(`a pinned certificate needs https, not ${r.url.protocol}`);
    const host = r.url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(r.url.port || 443);
    return new Promise<TransportResponse>((resolve, reject) => {
      let settled = false;
      let buf = new Uint8Array(0);
      const socket = tls.connect({
        host,
        port,
        rejectUnauthorized: false,
        ...(_isIp(host) ? {} : { servername: host }),
      });
      const finish = (e: Error | undefined, res?: TransportResponse) => {
        if (settled) return;
        settled = true;
        timer.cancel();
        r.signal?.removeEventListener("abort", onAbort);
        socket.destroy();
        if (e) reject(e);
        else resolve(res!);
      };
      const timer = this.#clock.setTimer(r.timeoutMs, () => {
        finish(new RedfishError("bmc-timeout", `${what}: no answer within ${r.timeoutMs} ms`));
      });
      const onAbort = () => finish(new DOMException("the request was aborted", "AbortError"));
      r.signal?.addEventListener("abort", onAbort, { once: true });
      socket.once("secureConnect", () => {
        const raw = socket.getPeerCertificate(true)?.raw as Uint8Array | undefined;
        const got = raw ? createHash("sha256").update(raw).digest() : new Uint8Array(32);
        if (!raw || !timingSafeEqual(got, this.#pin)) {
          const hex = raw ? certSha256(raw) : "none";
          finish(new RedfishError("bmc-tls", `${what}: the BMC's certificate has SHA-256 ${hex}, not the pinned one`));
          return;
        }
        socket.write(_head(r));
        if (r.body) socket.write(r.body);
      });
      socket.on("data", (chunk: Uint8Array) => {
        if (buf.length + chunk.length > MAX_HEAD + r.maxBytes + 64 * 1024) {
          finish(new RedfishError("bmc-bad-response", `${what}: the answer passed ${r.maxBytes} bytes`));
          return;
        }
        const next = new Uint8Array(buf.length + chunk.length);
        next.set(buf);
        next.set(chunk, buf.length);
        buf = next;
        try {
          const res = parseHttp1(buf, r.maxBytes, what, false);
          if (res) finish(undefined, res);
        } catch (e) {
          finish(e as Error);
        }
      });
      socket.once("end", () => {
        try {
          const res = parseHttp1(buf, r.maxBytes, what, true);
          finish(
            res ? undefined : new RedfishError("bmc-bad-response", `${what}: the connection closed mid-answer`),
            res,
          );
        } catch (e) {
          finish(e as Error);
        }
      });
      socket.once("error", (e: Error) => {
        finish(new RedfishError("bmc-unreachable", `${what}: ${e.message}`, {}, { cause: e }));
      });
    });
  }

  close(): void {}
}

function _head(r: TransportRequest): string {
  const lines = [`${r.method} ${r.url.pathname}${r.url.search} HTTP/1.1`, `Host: ${r.url.host}`, "Connection: close"];
  for (const [k, v] of Object.entries(r.headers)) {
    if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) throw new RangeError(`header ${JSON.stringify(k)} holds a line break`);
    lines.push(`${k}: ${v}`);
  }
  lines.push(`Content-Length: ${r.body?.length ?? 0}`);
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
    if (size === 0) return _concat(parts, n);
    n += size;
    if (n > maxBytes) throw new RedfishError("bmc-bad-response", `${what}: the answer passed ${maxBytes} bytes`);
    const start = eol + 2;
    if (buf.length < start + size + 2) return undefined;
    parts.push(buf.subarray(start, start + size));
    at = start + size + 2;
  }
}

function _concat(parts: Uint8Array[], n: number): Uint8Array {
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function _indexOf(buf: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= buf.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (buf[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

function _isIp(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(":");
}
