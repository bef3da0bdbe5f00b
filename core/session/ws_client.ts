/**
 * The node's WebSocket client (RFC 6455) over `Deno.connect` / `Deno.connectTls`, written here because Deno's
 * `WebSocket` cannot bound a message: it reassembles every continuation frame before the first `message` event, so a
 * gateway that sends FIN=0 and then endless continuations grows the node's memory without limit (issue 28, item 2),
 * and its `close()` throws for the codes 1003 and 1009 (item 1). This client
 *
 * - checks each frame's length against what is left of the message bound **before** reading its payload (close 1009),
 *   so a fragmented message never holds more than `maxMessageBytes`;
 * - refuses text frames (close 1003), masked or reserved-bit frames from the server, and out-of-order continuations
 *   (close 1002);
 * - reads from the socket only when the session asks for the next frame ({@link FrameTransport.receive}), so a
 *   flooding gateway meets TCP backpressure instead of an unbounded queue, and nothing is read after close;
 * - answers pings and close frames itself, and never lets a failure escape as an uncaught error: every failure
 *   closes the transport with a reason;
 * - writes the frames sent while a write is under way, or in the same turn, as one write (at most
 *   {@link WRITE_BATCH_BYTES} each), in the order they were sent: a group commit answers several commands at once,
 *   each with its own frame, and one socket write (one TLS record) per frame was a share of every command's cost on
 *   the event loop (issue 24).
 *
 * @module
 */
import { boundedString } from "../log/bounded_text.ts";
import { signalTimer } from "../clock.ts";
import { type FrameTransport, MAX_TRANSPORT_FRAME_BYTES, TransportError } from "./transport.ts";
import { checkTransportUrl } from "./url_policy.ts";
import {
  closePayload,
  encodeWsFrame,
  MAX_CONTROL_PAYLOAD,
  readWsFrameHeader,
  wsAcceptFor,
  WsOpcode,
  WsProtocolError,
} from "./ws_frame.ts";

/** Options of {@link connectWs}. */
export interface WsClientOptions {
  /** The whole opening (TCP, TLS, upgrade) must finish within this many ms (default 10 s). */
  readonly timeoutMs?: number;
  /** The largest message, reassembled (default {@link MAX_TRANSPORT_FRAME_BYTES}). */
  readonly maxMessageBytes?: number;
  /** Extra CA certificates (PEM) for `wss:`; the system's and Deno's roots otherwise. */
  readonly caCerts?: readonly string[];
}

/** The largest HTTP response head accepted on upgrade. */
export const MAX_UPGRADE_RESPONSE_BYTES = 16 * 1024;

const READ_CHUNK = 64 * 1024;

/** The most bytes of queued frames joined into one write (a larger frame goes alone). */
export const WRITE_BATCH_BYTES = 64 * 1024;

/** Opens `url` (`ws:` or `wss:`) and completes the upgrade; the returned transport is open. */
export async function connectWs(url: string, opts: WsClientOptions = {}): Promise<FrameTransport> {
  let u: URL;
  try {
    u = new URL(url);
  } catch (e) {
    throw new TransportError(`cannot open ${JSON.stringify(url)}: not a URL`, { cause: e });
  }
  if (u.protocol !== "ws:" && u.protocol !== "wss:") {
    throw new TransportError(`cannot open ${url}: the scheme must be ws: or wss:`);
  }
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const hostname = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  const port = u.port ? Number(u.port) : u.protocol === "wss:" ? 443 : 80;
  let conn: Deno.Conn | undefined;
  let timedOut = false;
  // A start's connect comes before its first Hello: a signal timer, not Deno's Node-layer setTimeout (clock.ts).
  const timer = signalTimer(timeoutMs, () => {
    timedOut = true;
    try {
      conn?.close();
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource)) throw e;
    }
  });
  try {
    conn = u.protocol === "wss:"
      ? await Deno.connectTls({ hostname, port, ...(opts.caCerts ? { caCerts: [...opts.caCerts] } : {}) })
      : await Deno.connect({ hostname, port });
    if (timedOut) throw new TransportError(`connect to ${url} timed out after ${timeoutMs} ms`);
    const leftover = await _upgrade(conn, u);
    if (timedOut) throw new TransportError(`connect to ${url} timed out after ${timeoutMs} ms`);
    timer.cancel();
    return new WsClientTransport(conn, leftover, opts.maxMessageBytes ?? MAX_TRANSPORT_FRAME_BYTES);
  } catch (e) {
    timer.cancel();
    _closeQuietly(conn);
    if (e instanceof TransportError) throw e;
    if (timedOut) throw new TransportError(`connect to ${url} timed out after ${timeoutMs} ms`, { cause: e });
    if (Object.values(Deno.errors).some((c) => e instanceof c)) {
      throw new TransportError(`connect to ${url} failed: ${(e as Error).message}`, { cause: e });
    }
    throw e;
  }
}

async function _upgrade(conn: Deno.Conn, u: URL): Promise<Uint8Array> {
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const req = [
    `GET ${u.pathname}${u.search} HTTP/1.1`,
    `Host: ${u.host}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${key}`,
    "Sec-WebSocket-Version: 13",
    "",
    "",
  ].join("\r\n");
  await _writeAll(conn, new TextEncoder().encode(req));
  let head: Uint8Array = new Uint8Array(0);
  let end = -1;
  while (end < 0) {
    const chunk = new Uint8Array(4096);
    const n = await conn.read(chunk);
    if (n === null) throw new TransportError("the server closed the connection during the upgrade");
    head = _concat(head, chunk.subarray(0, n));
    end = _indexOfCrlfCrlf(head);
    if (end < 0 && head.length > MAX_UPGRADE_RESPONSE_BYTES) {
      throw new TransportError(`the upgrade response head is over ${MAX_UPGRADE_RESPONSE_BYTES} bytes`);
    }
  }
  const text = new TextDecoder().decode(head.subarray(0, end));
  const [status, ...lines] = text.split("\r\n");
  if (!/^HTTP\/1\.1 101 /.test(status ?? "")) {
    throw new TransportError(`the server refused the upgrade: ${boundedString(status ?? "", 200)}`);
  }
  const headers = new Map<string, string>();
  for (const l of lines) {
    const i = l.indexOf(":");
    if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
  }
  if (headers.get("upgrade")?.toLowerCase() !== "websocket") throw new TransportError("upgrade: not to websocket");
  if (!/\bupgrade\b/i.test(headers.get("connection") ?? "")) throw new TransportError("upgrade: no Connection");
  if (headers.get("sec-websocket-accept") !== await wsAcceptFor(key)) {
    throw new TransportError("upgrade: Sec-WebSocket-Accept does not match the key");
  }
  if (headers.has("sec-websocket-extensions")) throw new TransportError("upgrade: an extension nobody asked for");
  return head.slice(end + 4);
}

/** The open connection as a {@link FrameTransport}. */
class WsClientTransport implements FrameTransport {
  readonly #conn: Deno.Conn;
  readonly #max: number;
  #buf: Uint8Array;
  #closed: string | undefined;
  #closeSent = false;
  #writes: Promise<void> = Promise.resolve();
  /** Encoded frames sent and not written yet, in order; {@link #flush} writes them while `#flushing`. */
  readonly #queued: Uint8Array[] = [];
  #flushing = false;
  #reading: Promise<Uint8Array | undefined> | undefined;

  constructor(conn: Deno.Conn, leftover: Uint8Array, max: number) {
    this.#conn = conn;
    this.#buf = leftover;
    this.#max = max;
  }

  get closedReason(): string | undefined {
    return this.#closed;
  }

  send(frame: Uint8Array): boolean {
    if (this.#closed !== undefined) return false;
    this.#write(encodeWsFrame(WsOpcode.binary, frame, { mask: true }));
    return true;
  }

  receive(): Promise<Uint8Array | undefined> {
    // One read at a time: a second caller waits for the first's frame and then reads its own.
    const prev = this.#reading ?? Promise.resolve(undefined);
    const next = prev.then(() => this.#readMessage());
    this.#reading = next;
    return next;
  }

  close(code = 1000, reason = ""): void {
    if (this.#closed !== undefined) return;
    this.#finish(`${code} ${reason}`.trim(), code, reason);
  }

  #finish(why: string, code?: number, reason = ""): void {
    if (this.#closed !== undefined) return;
    this.#closed = boundedString(why, 300);
    if (code !== undefined && !this.#closeSent) {
      this.#closeSent = true;
      this.#write(encodeWsFrame(WsOpcode.close, closePayload(code, reason), { mask: true }));
    }
    this.#writes = this.#writes.then(() => _closeQuietly(this.#conn));
  }

  #write(bytes: Uint8Array): void {
    this.#queued.push(bytes);
    if (this.#flushing) return; // the flush under way writes it after what it writes now
    this.#flushing = true;
    this.#writes = this.#writes.then(() => this.#flush()).catch((e) => {
      if (!_isConnError(e)) throw e;
      this.#closed ??= `error: ${e.message}`;
    });
  }

  /**
   * Writes the queued frames, as few writes as {@link WRITE_BATCH_BYTES} allows, until none is left. It stops
   * flushing in the same turn it finds the queue empty, so a frame sent after that starts the next flush.
   */
  async #flush(): Promise<void> {
    try {
      while (this.#queued.length > 0) {
        let n = 1;
        let size = this.#queued[0]!.length;
        while (n < this.#queued.length && size + this.#queued[n]!.length <= WRITE_BATCH_BYTES) {
          size += this.#queued[n]!.length;
          n++;
        }
        const batch = this.#queued.splice(0, n);
        await _writeAll(this.#conn, batch.length === 1 ? batch[0]! : _concat(...batch));
      }
    } catch (e) {
      this.#queued.length = 0;
      throw e;
    } finally {
      this.#flushing = false;
    }
  }

  async #readMessage(): Promise<Uint8Array | undefined> {
    const parts: Uint8Array[] = [];
    let size = 0;
    let fragmented = false;
    try {
      for (;;) {
        if (this.#closed !== undefined) return undefined;
        const h = await this.#header();
        if (h === undefined) return undefined;
        if (h.masked) throw new WsProtocolError(1002, "a masked frame from the server");
        if (h.opcode === WsOpcode.text) throw new WsProtocolError(1003, "a text frame (binary frames only)");
        if (h.opcode === WsOpcode.close) {
          const p = await this.#take(h.payloadLength);
          if (p === undefined) return undefined;
          const code = p.length >= 2 ? (p[0]! << 8) | p[1]! : 1005;
          const reason = new TextDecoder().decode(p.subarray(2));
          this.#finish(`${code} ${reason}`.trim(), code === 1005 ? 1000 : code, "");
          return undefined;
        }
        if (h.opcode === WsOpcode.ping || h.opcode === WsOpcode.pong) {
          const p = await this.#take(h.payloadLength);
          if (p === undefined) return undefined;
          if (h.opcode === WsOpcode.ping) this.#write(encodeWsFrame(WsOpcode.pong, p, { mask: true }));
          continue;
        }
        if (h.opcode === WsOpcode.continuation && !fragmented) {
          throw new WsProtocolError(1002, "a continuation frame outside a fragmented message");
        }
        if (h.opcode === WsOpcode.binary && fragmented) {
          throw new WsProtocolError(1002, "a new message inside a fragmented one");
        }
        if (h.payloadLength > this.#max - size) {
          throw new WsProtocolError(
            1009,
            `a message of at least ${size + h.payloadLength} bytes, over the ${this.#max}-byte bound`,
          );
        }
        const p = await this.#take(h.payloadLength);
        if (p === undefined) return undefined;
        parts.push(p);
        size += p.length;
        if (h.fin) return parts.length === 1 ? parts[0]! : _concat(...parts);
        fragmented = true;
      }
    } catch (e) {
      if (e instanceof WsProtocolError) {
        this.#finish(`${e.code} ${e.message}`, e.code, e.code === 1009 ? "message too big" : "protocol");
        return undefined;
      }
      if (_isConnError(e)) {
        this.#finish(`error: ${e.message}`);
        return undefined;
      }
      throw e;
    }
  }

  /** The next frame header (consumed from the buffer), or `undefined` at end of stream. */
  async #header() {
    for (;;) {
      const h = readWsFrameHeader(this.#buf);
      if (h) {
        this.#buf = this.#buf.subarray(h.headerLength);
        return h;
      }
      if (!await this.#fill()) return undefined;
    }
  }

  /** Exactly `n` payload bytes (n is already bounded by the caller). */
  async #take(n: number): Promise<Uint8Array | undefined> {
    if (n <= MAX_CONTROL_PAYLOAD || this.#buf.length >= n) {
      while (this.#buf.length < n) if (!await this.#fill()) return undefined;
      const out = this.#buf.slice(0, n);
      this.#buf = this.#buf.subarray(n);
      return out;
    }
    const out = new Uint8Array(n);
    let got = Math.min(this.#buf.length, n);
    out.set(this.#buf.subarray(0, got));
    this.#buf = this.#buf.subarray(got);
    while (got < n) {
      const r = await this.#conn.read(out.subarray(got));
      if (r === null) {
        this.#finish("1006 the connection ended inside a frame");
        return undefined;
      }
      got += r;
    }
    return out;
  }

  /** Reads more into the buffer; false at end of stream (the transport is then closed). */
  async #fill(): Promise<boolean> {
    const chunk = new Uint8Array(READ_CHUNK);
    const n = await this.#conn.read(chunk);
    if (n === null) {
      this.#finish("1006 the connection ended without a close frame");
      return false;
    }
    this.#buf = this.#buf.length === 0 ? chunk.subarray(0, n) : _concat(this.#buf, chunk.subarray(0, n));
    return true;
  }
}

function _isConnError(e: unknown): e is Error {
  return e instanceof Deno.errors.BadResource || e instanceof Deno.errors.ConnectionReset ||
    e instanceof Deno.errors.BrokenPipe || e instanceof Deno.errors.ConnectionAborted ||
    e instanceof Deno.errors.Interrupted || e instanceof Deno.errors.UnexpectedEof ||
    (e instanceof Error && e.name === "InvalidData");
}

async function _writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

function _closeQuietly(conn: Deno.Conn | undefined): void {
  try {
    conn?.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}

function _concat(...parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function _indexOfCrlfCrlf(b: Uint8Array): number {
  for (let i = 0; i + 3 < b.length; i++) {
    if (b[i] === 13 && b[i + 1] === 10 && b[i + 2] === 13 && b[i + 3] === 10) return i;
  }
  return -1;
}

/**
 * Opens a session WebSocket to `url` with the node's own client ({@link connectWs}) after the URL policy
 * ({@link checkTransportUrl}: `wss:`, or `ws:` to a loopback address); the whole opening must finish within
 * `timeoutMs`. `caCerts` (PEM, from `[gateway] ca_file`) are trusted besides the system's roots.
 */
export function connectWebSocket(
  url: string,
  timeoutMs = 10_000,
  opts: { caCerts?: readonly string[] } = {},
): Promise<FrameTransport> {
  try {
    checkTransportUrl(url, "session");
  } catch (e) {
    return Promise.reject(e);
  }
  return connectWs(url, { timeoutMs, ...opts });
}
