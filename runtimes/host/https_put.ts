/**
 * Uploads to presigned https URLs (core's `Uploader`) under the transfer rules of 000 §Instances: https only, redirects
 * followed only to https (at most 5), a transfer that moves less than 1 MiB in a 2-minute window is stalled
 * (`upload-stalled`), and no transfer lasts more than 6 hours (`upload-timeout`).
 *
 * The request is HTTP/1.1 written over `Deno.connectTls` by hand rather than through `fetch`: a presigned PUT needs a
 * `Content-Length` (fetch sends a stream body chunked), and writing the body ourselves measures real progress (each
 * write returns when the kernel took the bytes), which the stall rule needs. The trusted CAs are injectable, so tests
 * trust a local server's certificate made by openssl. A body is bytes (`put`) or a file streamed from disk
 * (`putFile`, for snapshots of many GiB); the stall window and the cap run on the injected `core/clock.ts` clock (tests
 * pass `fixtures/clock` FakeClock), so no test of the rules waits for real time.
 *
 * @module
 */
import type { FileUploader } from "../../core/commands/kind_handlers/instance_snapshot.ts";
import { type Uploader, UploadError } from "../../core/commands/kind_handlers/logs_collect.ts";
import { type Clock, realClock, repeat } from "../../core/clock.ts";

/** The part of the clock the transfer rules run on: the cap's elapsed time, the stall window and the cap's timer. */
export type TransferClock = Pick<Clock, "monotonic" | "setTimer">;

/** The transfer rules. */
export interface TransferLimits {
  readonly stallWindowMs: number;
  readonly stallMinBytes: number;
  readonly capMs: number;
  readonly maxRedirects: number;
  readonly chunkBytes: number;
}

/** The seed's numbers. */
export const TRANSFER_LIMITS: TransferLimits = {
  stallWindowMs: 2 * 60_000,
  stallMinBytes: 1024 * 1024,
  capMs: 6 * 3_600_000,
  maxRedirects: 5,
  chunkBytes: 64 * 1024,
};

/** The most response head read. */
const MAX_HEAD_BYTES = 64 * 1024;

/** A byte stream to a server. */
export interface Conn {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  close(): void;
}

/** Opens a TLS connection; the real one is Deno.connectTls with the configured CAs. */
export type TlsConnect = (hostname: string, port: number) => Promise<Conn>;

/** A request body: its length and its bytes in order (read again for each redirect hop). */
interface _Body {
  readonly size: number;
  chunks(chunkBytes: number): AsyncIterable<Uint8Array>;
}

function _bytesBody(b: Uint8Array): _Body {
  return {
    size: b.length,
    async *chunks(n) {
      for (let off = 0; off < b.length; off += n) yield b.subarray(off, off + n);
    },
  };
}

async function _fileBody(path: string): Promise<_Body> {
  const size = (await Deno.stat(path)).size;
  return {
    size,
    async *chunks(n) {
      const f = await Deno.open(path, { read: true });
      try {
        const buf = new Uint8Array(n);
        let left = size;
        while (left > 0) {
          const got = await f.read(buf.subarray(0, Math.min(n, left)));
          if (got === null) throw new UploadError("upload-failed", `${path} shrank during the upload`);
          left -= got;
          yield buf.subarray(0, got);
        }
      } finally {
        f.close();
      }
    },
  };
}

/** HTTP PUT over TLS with the transfer rules. */
export class HttpsUploader implements Uploader, FileUploader {
  readonly #limits: TransferLimits;
  readonly #connect: TlsConnect;
  readonly #clock: TransferClock;

  constructor(
    opts: { caCerts?: string[]; connect?: TlsConnect; limits?: Partial<TransferLimits>; clock?: TransferClock } = {},
  ) {
    this.#limits = { ...TRANSFER_LIMITS, ...opts.limits };
    this.#clock = opts.clock ?? realClock;
    this.#connect = opts.connect ??
      ((hostname, port) => Deno.connectTls({ hostname, port, ...(opts.caCerts ? { caCerts: opts.caCerts } : {}) }));
  }

  /** PUTs `body` to `url`, following https redirects; rejects with `UploadError`. */
  put(url: string, body: Uint8Array, opts: { contentType: string; signal?: AbortSignal }): Promise<void> {
    return this.#put(url, _bytesBody(body), opts);
  }

  /** PUTs the file at `path` to `url`, streamed from disk, under the same rules. */
  async putFile(url: string, path: string, opts: { contentType: string; signal?: AbortSignal }): Promise<void> {
    return await this.#put(url, await _fileBody(path), opts);
  }

  async #put(url: string, body: _Body, opts: { contentType: string; signal?: AbortSignal }): Promise<void> {
    let target = _httpsUrl(url, "upload URL");
    const started = this.#clock.monotonic();
    for (let hop = 0;; hop++) {
      const remainingMs = this.#limits.capMs - (this.#clock.monotonic() - started);
      if (remainingMs <= 0) throw new UploadError("upload-timeout", `the transfer passed ${this.#limits.capMs} ms`);
      const res = await this.#once(target, body, opts.contentType, remainingMs, opts.signal);
      if ([301, 302, 307, 308].includes(res.status)) {
        if (hop >= this.#limits.maxRedirects) {
          throw new UploadError("upload-failed", `more than ${this.#limits.maxRedirects} redirects`);
        }
        if (res.location === undefined) throw new UploadError("upload-failed", `HTTP ${res.status} without Location`);
        target = _httpsUrl(new URL(res.location, target).href, "redirect");
        continue;
      }
      if (res.status >= 200 && res.status < 300) return;
      throw new UploadError("upload-failed", `HTTP ${res.status} from ${target.host}`);
    }
  }

  async #once(
    url: URL,
    body: _Body,
    contentType: string,
    capMs: number,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; location?: string }> {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const port = url.port === "" ? 443 : Number(url.port);
    let conn: Conn;
    try {
      conn = await this.#connect(host, port);
    } catch (e) {
      throw new UploadError("upload-failed", `cannot connect to ${url.host}: ${e instanceof Error ? e.message : e}`, {
        cause: e,
      });
    }
    let moved = 0;
    let sent = 0;
    let failure: UploadError | undefined;
    const fail = (e: UploadError) => {
      failure ??= e;
      _closeQuietly(conn);
    };
    let lastMoved = 0;
    let lastSent = 0;
    const watch = repeat(this.#clock, this.#limits.stallWindowMs, () => {
      const remaining = body.size - lastSent;
      const required = remaining > 0 ? Math.min(this.#limits.stallMinBytes, remaining) : 1;
      if (moved - lastMoved < required) {
        fail(
          new UploadError(
            "upload-stalled",
            `${moved - lastMoved} bytes moved in ${this.#limits.stallWindowMs} ms (at least ${required} required)`,
          ),
        );
      }
      lastMoved = moved;
      lastSent = sent;
    });
    const cap = this.#clock.setTimer(
      capMs,
      () => fail(new UploadError("upload-timeout", `the transfer passed its ${this.#limits.capMs} ms cap`)),
    );
    const onAbort = () => fail(new UploadError("upload-failed", "cancelled"));
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      if (signal?.aborted) throw new UploadError("upload-failed", "cancelled");
      const head =
        `PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: ${contentType}\r\n` +
        `Content-Length: ${body.size}\r\nConnection: close\r\nUser-Agent: bcd\r\n\r\n`;
      await _writeAll(conn, new TextEncoder().encode(head));
      for await (const chunk of body.chunks(this.#limits.chunkBytes)) {
        if (failure !== undefined) throw failure;
        await _writeAll(conn, chunk);
        sent += chunk.length;
        moved += chunk.length;
      }
      return await _readHead(conn, (n) => moved += n);
    } catch (e) {
      if (failure !== undefined) throw failure;
      if (e instanceof UploadError) throw e;
      throw new UploadError("upload-failed", `transfer to ${url.host} failed: ${e instanceof Error ? e.message : e}`, {
        cause: e,
      });
    } finally {
      watch.cancel();
      cap.cancel();
      signal?.removeEventListener("abort", onAbort);
      _closeQuietly(conn);
    }
  }
}

function _httpsUrl(raw: string, what: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (e) {
    throw new UploadError("upload-refused", `${what} ${JSON.stringify(raw)} is not a URL`, { cause: e });
  }
  if (u.protocol !== "https:") throw new UploadError("upload-refused", `${what} must be https, got ${u.protocol}`);
  return u;
}

/** Closes a connection that may already be closed. */
function _closeQuietly(conn: Conn): void {
  try {
    conn.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}

async function _writeAll(conn: Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/** Reads the response head (bounded) and returns the status and Location. */
async function _readHead(conn: Conn, progress: (n: number) => void): Promise<{ status: number; location?: string }> {
  const buf = new Uint8Array(MAX_HEAD_BYTES);
  let len = 0;
  while (true) {
    const n = await conn.read(buf.subarray(len));
    if (n === null) break;
    len += n;
    progress(n);
    const text = new TextDecoder("latin1").decode(buf.subarray(0, len));
    const end = text.indexOf("\r\n\r\n");
    if (end >= 0) return _parseHead(text.slice(0, end));
    if (len === buf.length) throw new UploadError("upload-failed", `response head longer than ${MAX_HEAD_BYTES} bytes`);
  }
  throw new UploadError("upload-failed", "the server closed the connection without a response");
}

function _parseHead(head: string): { status: number; location?: string } {
  const lines = head.split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "");
  if (!m) throw new UploadError("upload-failed", `not an HTTP/1.1 response: ${JSON.stringify(lines[0]?.slice(0, 80))}`);
  let location: string | undefined;
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    if (i > 0 && l.slice(0, i).trim().toLowerCase() === "location") location = l.slice(i + 1).trim();
  }
  return { status: Number(m[1]), ...(location !== undefined ? { location } : {}) };
}
