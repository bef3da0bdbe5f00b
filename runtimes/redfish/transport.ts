/**
 * How the Redfish client reaches a BMC: one request, one bounded answer. {@link FetchTransport} is Deno's `fetch`, with
 * `Deno.createHttpClient({ caCerts })` when the target pins a CA (note: Deno adds that CA to its built-in roots rather
 * than replacing them, so a CA pin accepts the pinned CA or a public root; a BMC known by a self-signed or private
 * certificate is pinned by fingerprint instead). `SocketTransport` (`socket_transport.ts`) pins the leaf's
 * SHA-256. Both refuse redirects, bound the body before they keep it and end a request at its time.
 *
 * A {@link StreamedBody} (a firmware image pushed to the BMC) goes out with its `Content-Length`: Deno's `fetch` sends a
 * stream chunked and drops the length, which BMCs refuse (DMTF's mockup answers 411), so `FetchTransport` refuses one
 * and the client sends it through a `SocketTransport` that verifies the BMC by the same pin or CA.
 *
 * @module
 */
import type { Clock } from "../../core/clock.ts";
import { RedfishError } from "./errors.ts";

/** A body streamed to the BMC: exactly `size` bytes; a stream that errors ends the request with its error. */
export interface StreamedBody {
  readonly size: number;
  readonly stream: ReadableStream<Uint8Array>;
}

/** Whether a request body is streamed. */
export function isStreamed(b: Uint8Array | StreamedBody | undefined): b is StreamedBody {
  return b !== undefined && !(b instanceof Uint8Array);
}

/** One request. */
export interface TransportRequest {
  readonly method: "GET" | "POST" | "PATCH" | "DELETE";
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Uint8Array<ArrayBuffer> | StreamedBody;
  /** The whole request, answer included, must end within this. */
  readonly timeoutMs: number;
  /** The most body bytes kept; more fails `bmc-bad-response`. */
  readonly maxBytes: number;
  readonly signal?: AbortSignal;
}

/** A BMC's answer; header names are lowercase. */
export interface TransportResponse {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: Uint8Array;
}

/** A way to send requests to one BMC. */
export interface RedfishTransport {
  request(r: TransportRequest): Promise<TransportResponse>;
  close(): void;
}

/** Deno's fetch, with the pinned CA (if any) through its own HTTP client. */
export class FetchTransport implements RedfishTransport {
  readonly #client: Deno.HttpClient | undefined;
  readonly #clock: Pick<Clock, "setTimer">;

  constructor(o: { caPem?: string; clock: Pick<Clock, "setTimer"> }) {
    this.#client = o.caPem ? Deno.createHttpClient({ caCerts: [o.caPem] }) : undefined;
    this.#clock = o.clock;
  }

  async request(r: TransportRequest): Promise<TransportResponse> {
    const sent = r.body;
    if (isStreamed(sent)) throw new TypeError("fetch cannot send a streamed body with its Content-Length");
    const ctl = new AbortController();
    let timedOut = false;
    const timer = this.#clock.setTimer(r.timeoutMs, () => {
      timedOut = true;
      ctl.abort();
    });
    const onAbort = () => ctl.abort();
    r.signal?.addEventListener("abort", onAbort, { once: true });
    const what = `${r.method} ${r.url.pathname}`;
    try {
      const res = await fetch(r.url, {
        method: r.method,
        headers: r.headers,
        ...(sent ? { body: sent } : {}),
        redirect: "manual",
        signal: ctl.signal,
        ...(this.#client ? { client: this.#client } : {}),
      });
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        throw new RedfishError("bmc-unreachable", `${what} redirected to ${res.headers.get("location") ?? "?"}`, {
          status: res.status,
        });
      }
      const body = await readBounded(res.body, r.maxBytes, what);
      const headers = new Map<string, string>();
      res.headers.forEach((v, k) => headers.set(k.toLowerCase(), v));
      return { status: res.status, headers, body };
    } catch (e) {
      if (timedOut) {
        throw new RedfishError("bmc-timeout", `${what}: no answer within ${r.timeoutMs} ms`, {}, { cause: e });
      }
      if (e instanceof TypeError) {
        const said = e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message;
        const tls = /certificate|tls|handshake/i.test(said);
        throw new RedfishError(tls ? "bmc-tls" : "bmc-unreachable", `${what}: ${said}`, {}, { cause: e });
      }
      throw e;
    } finally {
      timer.cancel();
      r.signal?.removeEventListener("abort", onAbort);
    }
  }

  close(): void {
    this.#client?.close();
  }
}

/** Reads a body, failing `bmc-bad-response` as soon as it passes `max` bytes (what was read is dropped). */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  max: number,
  what: string,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let n = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > max) {
      await reader.cancel();
      throw new RedfishError("bmc-bad-response", `${what}: the answer passed ${max} bytes`);
    }
    parts.push(value);
  }
  return concatBytes(parts, n);
}

/** `parts` joined into one array of `n` bytes (their total length). */
export function concatBytes(parts: readonly Uint8Array[], n: number): Uint8Array {
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
