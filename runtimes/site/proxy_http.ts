/**
 * The request `site.httpProxy` sends: one HTTP/1.0 request (so the answer is never chunked) with `Connection: close`,
 * over a TCP connection to the address the guards checked (`proxy_guard.ts`), with TLS for `https:` started on that
 * connection for the URL's host name (so the certificate is checked against the name, while the address stays the
 * checked one). The answer is read up to its head (≤ 64 KiB) plus `maxBytes` of body: what is past it is dropped and
 * the answer is marked truncated. The caller's headers may not set the framing (`Host`, `Content-Length`,
 * `Connection`, `Transfer-Encoding`, `TE`, `Upgrade`, `Keep-Alive`, `Trailer`, `Proxy-*`), and no name or value may
 * hold a line break. Redirects are answered as they are, never followed (a redirect would skip the guards).
 *
 * @module
 */
import type { Clock } from "../../core/clock.ts";
import { CommandFailed, InvalidPayload } from "../../core/commands/rejection.ts";

const MAX_HEAD = 64 * 1024;
const MAX_HEADERS = 64;
const FRAMING = /^(host|content-length|connection|transfer-encoding|te|upgrade|keep-alive|trailer|proxy-.*)$/i;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

/** One proxied request. */
export interface ProxyHttpRequest {
  readonly method: string;
  readonly url: URL;
  /** The checked address to connect to, and its port. */
  readonly address: string;
  readonly port: number;
  readonly headers: readonly { readonly name: string; readonly value: string }[];
  readonly body: Uint8Array;
  readonly maxBytes: number;
  readonly timeoutMs: number;
  readonly clock: Pick<Clock, "setTimer">;
  /** Extra CAs for `https:` targets (tests); the system roots otherwise. */
  readonly caCerts?: readonly string[];
  readonly signal?: AbortSignal;
}

/** The answer. */
export interface ProxyHttpResponse {
  readonly status: number;
  readonly headers: { name: string; value: string }[];
  readonly body: Uint8Array;
  readonly truncated: boolean;
}

/** Checks the caller's headers; `InvalidPayload` names the first bad one. */
export function checkHeaders(headers: readonly { readonly name: string; readonly value: string }[]): void {
  if (headers.length > MAX_HEADERS) throw new InvalidPayload(`${headers.length} headers; at most ${MAX_HEADERS}`);
  for (const h of headers) {
    if (!TOKEN.test(h.name)) throw new InvalidPayload(`header name ${JSON.stringify(h.name)} is not an HTTP token`);
    if (FRAMING.test(h.name)) throw new InvalidPayload(`header ${h.name} is set by the proxy itself`);
    if (/[\r\n\0]/.test(h.value) || h.value.length > 8192) {
      throw new InvalidPayload(`header ${h.name} holds a line break or is over 8 KiB`);
    }
  }
}

/** Sends the request and reads the bounded answer; a connection or TLS failure is `proxy-unreachable`. */
export async function proxyHttp(r: ProxyHttpRequest): Promise<ProxyHttpResponse> {
  checkHeaders(r.headers);
  const head = [
    `${r.method} ${r.url.pathname}${r.url.search} HTTP/1.0`,
    `Host: ${r.url.host}`,
    "Connection: close",
    `Content-Length: ${r.body.length}`,
    ...r.headers.map((h) => `${h.name}: ${h.value}`),
  ].join("\r\n") + "\r\n\r\n";
  let conn: Deno.Conn | undefined;
  let timedOut = false;
  const timer = r.clock.setTimer(r.timeoutMs, () => {
    timedOut = true;
    _close(conn);
  });
  const onAbort = () => _close(conn);
  r.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const tcp = await Deno.connect({ hostname: r.address, port: r.port });
    conn = tcp;
    if (r.url.protocol === "https:") {
      conn = await Deno.startTls(tcp, {
        hostname: r.url.hostname.replace(/^\[|\]$/g, ""),
        ...(r.caCerts ? { caCerts: [...r.caCerts] } : {}),
      });
    }
    await _writeAll(conn, new TextEncoder().encode(head));
    await _writeAll(conn, r.body);
    const limit = MAX_HEAD + r.maxBytes + 1;
    const buf = new Uint8Array(limit);
    let n = 0;
    while (n < limit) {
      const got = await conn.read(buf.subarray(n));
      if (got === null) break;
      n += got;
    }
    return _parse(buf.subarray(0, n), r.maxBytes, r.url.href);
  } catch (e) {
    if (timedOut) throw new CommandFailed("proxy-timeout", `${r.url.href}: no full answer within ${r.timeoutMs} ms`);
    if (
      e instanceof Deno.errors.ConnectionRefused || e instanceof Deno.errors.ConnectionReset ||
      e instanceof Deno.errors.TimedOut || e instanceof Deno.errors.BadResource ||
      e instanceof Deno.errors.NotConnected ||
      e instanceof Deno.errors.InvalidData || e instanceof Deno.errors.Interrupted ||
      e instanceof Deno.errors.UnexpectedEof
    ) {
      throw new CommandFailed("proxy-unreachable", `${r.url.href} at ${r.address}:${r.port}: ${e.message}`, {
        cause: e,
      });
    }
    throw e;
  } finally {
    timer.cancel();
    r.signal?.removeEventListener("abort", onAbort);
    _close(conn);
  }
}

function _parse(buf: Uint8Array, maxBytes: number, what: string): ProxyHttpResponse {
  let end = -1;
  for (let i = 0; i + 3 < buf.length && i < MAX_HEAD; i++) {
    if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new CommandFailed("proxy-bad-response", `${what}: no complete HTTP head within ${MAX_HEAD} bytes`);
  const lines = new TextDecoder().decode(buf.subarray(0, end)).split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "");
  if (!m) throw new CommandFailed("proxy-bad-response", `${what}: not an HTTP status line`);
  const headers: { name: string; value: string }[] = [];
  for (const line of lines.slice(1, 1 + 100)) {
    const c = line.indexOf(":");
    if (c > 0) headers.push({ name: line.slice(0, c).trim(), value: line.slice(c + 1).trim() });
  }
  let body = buf.subarray(end + 4);
  const cl = headers.find((h) => h.name.toLowerCase() === "content-length");
  if (cl && /^\d+$/.test(cl.value) && Number(cl.value) < body.length) body = body.subarray(0, Number(cl.value));
  const truncated = body.length > maxBytes;
  return { status: Number(m[1]), headers, body: body.slice(0, maxBytes), truncated };
}

async function _writeAll(c: Deno.Conn, b: Uint8Array): Promise<void> {
  let n = 0;
  while (n < b.length) n += await c.write(b.subarray(n));
}

function _close(c: Deno.Conn | undefined): void {
  try {
    c?.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e; // closed already
  }
}
