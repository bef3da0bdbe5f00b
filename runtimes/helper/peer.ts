/**
 * One connection to the root helper, as the server accounts for it: its answer queue, what it costs and when it last
 * made progress. The server ({@link ./server.ts}) decides; a peer only keeps the books and does the I/O.
 *
 * - **Reading** goes through {@link Peer.readable}, a stream over `conn.read` that the peer can stop: the peer's EOF
 *   (a half-close) ends the stream but leaves the connection open, so answers of requests still running are written
 *   after it (Deno's own `conn.readable` closes the resource at EOF).
 * - **Writing** is one queue drained by one writer. {@link Peer.unsent} counts the bytes queued and not yet taken by
 *   the kernel; the server stops reading from a peer past {@link MAX_UNSENT_ANSWER_BYTES} until it drains. A write
 *   that fails drops the whole queue at once and marks the peer dead: nothing more is written, nothing is retried.
 *
 * @module
 */
import { encodeError, HelperError } from "../../core/helper/mod.ts";
import type { Clock } from "../../core/clock.ts";

/** Answer bytes a peer may leave unread before the helper stops reading its requests (backpressure). */
export const MAX_UNSENT_ANSWER_BYTES = 256 * 1024;

/** The read chunk of one peer; each chunk read is copied out before the next read. */
const _READ_CHUNK = 64 * 1024;

const _enc = new TextEncoder();

/** Errors of a connection the peer ended or broke: expected, not logged as failures. */
export function quietConnError(e: unknown): boolean {
  return e instanceof Deno.errors.BrokenPipe || e instanceof Deno.errors.ConnectionReset ||
    e instanceof Deno.errors.BadResource || e instanceof Deno.errors.NotConnected ||
    e instanceof Deno.errors.Interrupted;
}

/** One connection, with its books. */
export class Peer {
  /** Requests read and not yet answered. */
  running = 0;
  /** Answer bytes queued and not yet written. */
  unsent = 0;
  /** When a request was last read or an answer byte last written (ms, the server's clock). */
  lastActivity: number;
  /** When an answer byte was last written, or the queue was last empty (ms). */
  lastWrite: number;
  /** Refusals logged, and refusals past the log's burst (counted, logged once at close). */
  refusalsLogged = 0;
  refusalsSuppressed = 0;
  /** Set once the server decided to end this peer (it is no longer a candidate for eviction). */
  ending = false;
  /** Why the server ends this peer gracefully: sent as the `closing` notice after its last answer. */
  closingWhy: string | undefined;
  readonly #conn: Deno.Conn;
  readonly #clock: Pick<Clock, "monotonic">;
  readonly #onIoError: (e: unknown) => void;
  #queue: Uint8Array[] = [];
  #writing = false;
  #dead = false;
  #waiters: (() => void)[] = [];
  #stopRead: (() => void) | undefined;
  readonly #stopped: Promise<null>;

  constructor(
    readonly id: number,
    conn: Deno.Conn,
    clock: Pick<Clock, "monotonic">,
    onIoError: (e: unknown) => void,
  ) {
    this.#conn = conn;
    this.#clock = clock;
    this.#onIoError = onIoError;
    this.lastActivity = clock.monotonic();
    this.lastWrite = this.lastActivity;
    this.#stopped = new Promise<null>((r) => this.#stopRead = () => r(null));
  }

  /** Whether a write failed or the peer was closed: nothing more is written. */
  get dead(): boolean {
    return this.#dead;
  }

  /** The peer's bytes; ends at its EOF or when {@link stopReading} is called, without closing the connection. */
  readable(): ReadableStream<Uint8Array> {
    const buf = new Uint8Array(_READ_CHUNK);
    return new ReadableStream<Uint8Array>({
      pull: async (c) => {
        const read = this.#conn.read(buf);
        const n = await Promise.race([read, this.#stopped]);
        if (n === null) {
          // An abandoned read ends with the connection; its buffer is never read again.
          read.catch((e) => {
            if (!quietConnError(e)) this.#onIoError(e);
          });
          c.close();
          return;
        }
        c.enqueue(buf.slice(0, n));
      },
    });
  }

  /** Ends {@link readable}: the helper reads nothing more from this peer. */
  stopReading(): void {
    this.#stopRead?.();
  }

  /** Queues one answer line. Dropped when the peer is dead. */
  send(line: string): void {
    if (this.#dead) return;
    const bytes = _enc.encode(line);
    this.#queue.push(bytes);
    this.unsent += bytes.length;
    if (!this.#writing) void this.#pump();
  }

  /** Queues the `closing` notice (id `null`) with `why`. */
  sendClosing(why: string): void {
    this.send(encodeError(null, new HelperError("closing", why)));
  }

  /** Resolves once the unsent bytes are at most `bytes`, or the peer is dead. */
  drained(bytes = 0): Promise<void> {
    if (this.#dead || this.unsent <= bytes) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const check = () => {
        if (this.#dead || this.unsent <= bytes) resolve();
        else this.#waiters.push(check);
      };
      this.#waiters.push(check);
    });
  }

  /** Closes the connection now: the queue is dropped, reading stops. */
  close(): void {
    this.#die();
    try {
      this.#conn.close();
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource)) throw e;
    }
  }

  #die(): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#queue = [];
    this.unsent = 0;
    this.stopReading();
    this.#wake();
  }

  #wake(): void {
    const w = this.#waiters;
    this.#waiters = [];
    for (const f of w) f();
  }

  async #pump(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#queue.length > 0 && !this.#dead) {
        const bytes = this.#queue[0]!;
        let n = 0;
        while (n < bytes.length) {
          const w = await this.#conn.write(bytes.subarray(n));
          if (this.#dead) return;
          n += w;
          this.unsent -= w;
          this.lastWrite = this.lastActivity = this.#clock.monotonic();
        }
        this.#queue.shift();
        this.#wake();
      }
    } catch (e) {
      if (!quietConnError(e)) this.#onIoError(e);
      this.#die(); // a dead peer's queue goes at once: every later answer is dropped, not tried
    } finally {
      this.#writing = false;
      if (this.#queue.length === 0) this.lastWrite = this.#clock.monotonic();
      this.#wake();
    }
  }
}
