/**
 * HTTP/1.1 to a BMC on a socket this transport holds itself, for what Deno's `fetch` cannot do:
 *
 * - **A BMC pinned by the SHA-256 of its leaf certificate** (BMCs mostly carry self-signed ones, often for a name that
 *   is not the one they are reached by). `fetch` cannot show the peer's certificate nor skip its own chain check for
 *   one client, so the TLS handshake is done with `node:tls` (`rejectUnauthorized: false`: no chain or name check), the
 *   SHA-256 of the leaf's DER (`getPeerCertificate().raw`) is compared with the pin in constant time, and only then is
 *   the request, credentials included, written on that connection: a peer with another certificate never sees a byte.
 * - **A streamed body with its `Content-Length`** (a firmware image pushed to `HttpPushUri`): `fetch` sends a stream
 *   chunked, which BMCs refuse. Here the head declares the length, the stream is written with backpressure (the
 *   socket's `drain`), a stream that errors ends the request with its own error and the connection is dropped before
 *   the declared length, so the BMC never holds a complete body; a stream longer or shorter than declared is refused
 *   the same way. For such requests the transport also verifies a BMC by CA (`node:tls` with that CA alone, strict,
 *   unlike `fetch`'s added root) or by the system roots, or speaks plain HTTP where the URL says `http:` (loopback).
 *
 * The request is HTTP/1.1 with `Connection: close`; the answer is read with bounds (`http1.ts`). An answer that comes
 * while the body is still going out (a 413, a 401) ends the request with that answer.
 *
 * @module
 */
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { bytesEqual } from "../../core/pki/ed25519.ts";
import { sha256HexSync, sha256Sync } from "../../core/util/sha256.ts";
import type { Clock } from "../../core/clock.ts";
import { RedfishError } from "./errors.ts";
import { MAX_HEAD, parseHttp1, requestHead } from "./http1.ts";
import {
  isStreamed,
  type RedfishTransport,
  type StreamedBody,
  type TransportRequest,
  type TransportResponse,
} from "./transport.ts";

/** Lowercase hex SHA-256 of a DER certificate. */
export function certSha256(der: Uint8Array): string {
  return sha256HexSync(der);
}

/** How the BMC is verified: by its leaf's SHA-256, by a CA alone, or by the system roots. */
export type SocketPeer = { readonly certSha256: string } | { readonly caPem: string } | "system-roots";

/** See the module doc. */
export class SocketTransport implements RedfishTransport {
  readonly #pin: Uint8Array | undefined;
  readonly #peer: SocketPeer;
  readonly #clock: Pick<Clock, "setTimer">;

  constructor(o: { peer: SocketPeer; clock: Pick<Clock, "setTimer"> }) {
    if (typeof o.peer === "object" && "certSha256" in o.peer) {
      if (!/^[0-9a-f]{64}$/.test(o.peer.certSha256)) {
        throw new RangeError(`cert_sha256 ${JSON.stringify(o.peer.certSha256)} is not 64 lowercase hex digits`);
      }
      this.#pin = Uint8Array.from(o.peer.certSha256.match(/../g)!.map((h) => parseInt(h, 16)));
    }
    this.#peer = o.peer;
    this.#clock = o.clock;
  }

  request(r: TransportRequest): Promise<TransportResponse> {
    const what = `${r.method} ${r.url.pathname}`;
    const plain = r.url.protocol === "http:";
    if (plain && this.#pin) throw new RangeError(`a pinned certificate needs https, not ${r.url.protocol}`);
    if (!plain && r.url.protocol !== "https:") throw new RangeError(`${r.url.protocol} is not http or https`);
    const host = r.url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(r.url.port || (plain ? 80 : 443));
    const bodyLength = r.body === undefined ? 0 : isStreamed(r.body) ? r.body.size : r.body.length;
    const head = requestHead(r, bodyLength);
    // node:net and node:tls, loaded at the first request, not at the agent's start (issue 24).
    const sockets = Promise.all([import("node:net"), import("node:tls")]);
    return sockets.then(([net, tls]) =>
      new Promise<TransportResponse>((resolve, reject) => {
        let settled = false;
        let buf = new Uint8Array(0);
        const ca = typeof this.#peer === "object" && "caPem" in this.#peer ? [this.#peer.caPem] : undefined;
        const socket = plain ? net.connect({ host, port }) : tls.connect({
          host,
          port,
          rejectUnauthorized: this.#pin === undefined,
          ...(ca ? { ca } : {}),
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
        socket.once(plain ? "connect" : "secureConnect", () => {
          if (this.#pin) {
            const raw = (socket as TLSSocket).getPeerCertificate(true)?.raw as Uint8Array | undefined;
            const got = raw ? sha256Sync(raw) : new Uint8Array(32);
            if (!raw || !bytesEqual(got, this.#pin)) {
              const hex = raw ? certSha256(raw) : "none";
              finish(
                new RedfishError("bmc-tls", `${what}: the BMC's certificate has SHA-256 ${hex}, not the pinned one`),
              );
              return;
            }
          }
          socket.write(head);
          if (r.body === undefined) return;
          if (!isStreamed(r.body)) socket.write(r.body);
          else _pump(r.body, socket, () => settled, what).catch((e) => finish(e as Error));
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
          const tlsFailure = !plain && /certificate|verify|tls|handshake|self.signed/i.test(e.message);
          finish(
            new RedfishError(tlsFailure ? "bmc-tls" : "bmc-unreachable", `${what}: ${e.message}`, {}, { cause: e }),
          );
        });
      })
    );
  }

  close(): void {}
}

/**
 * Writes `body` to `socket` with backpressure, exactly `body.size` bytes: a stream that errors, or that is longer or
 * shorter than declared, rejects (the caller drops the connection before the declared length is reached). Stops when
 * `ended()` (the request settled, e.g. the BMC answered early).
 */
async function _pump(body: StreamedBody, socket: Socket, ended: () => boolean, what: string): Promise<void> {
  const reader = body.stream.getReader();
  let sent = 0;
  try {
    for (;;) {
      if (ended()) return;
      const { done, value } = await reader.read();
      if (done) break;
      if (ended()) return;
      sent += value.length;
      if (sent > body.size) {
        throw new RangeError(`${what}: the body ran past its declared ${body.size} bytes; the request was dropped`);
      }
      if (!socket.write(value)) {
        await new Promise<void>((resolve) => {
          const go = () => {
            socket.off("drain", go);
            socket.off("close", go);
            resolve();
          };
          socket.on("drain", go);
          socket.on("close", go);
        });
      }
    }
    if (sent !== body.size && !ended()) {
      throw new RangeError(
        `${what}: the body ended at ${sent} of its declared ${body.size} bytes; the request was dropped`,
      );
    }
  } finally {
    if (ended()) await reader.cancel();
    reader.releaseLock();
  }
}

function _isIp(host: string): boolean {
  return /^[0-9.]+$/.test(host) || host.includes(":");
}
