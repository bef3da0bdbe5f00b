/**
 * The framing's streaming decoder: it reassembles messages across any chunking of the stream, checks each header
 * before it takes any byte of the body, and holds at most one partial message, in a reassembly buffer that it
 * reuses. Bodies are views, never copies: a view into the chunk that was fed when the message lies whole in it,
 * or into the reassembly buffer; either is valid until the next call to {@link Decoder.feed} or
 * {@link Decoder.next}.
 *
 * @module
 */
import { FramingError } from "./errors.ts";
import { HEADER_BYTES, LIMITS, MAX_BODY, type Sender, SENDERS } from "./frame_kinds.ts";

/** One decoded message: its kind and a view of its body. */
export interface Frame {
  readonly kind: number;
  readonly body: Uint8Array;
}

/** Options of a {@link Decoder}. */
export interface DecoderOptions {
  /** Whose messages the stream carries: a guest decodes the host's ("host"), a host the guest's ("guest"). */
  readonly from: Sender;
}

/** A handler of the raw hot path: the body is `buf[start, end)`. */
export type RawFrameHandler = (kind: number, buf: Uint8Array, start: number, end: number) => void;

const EMPTY = new Uint8Array(0);

/** Reassembles framed messages; a {@link FramingError} ends it for good (the stream is malformed). */
export class Decoder {
  readonly #mask: number;
  readonly #hdr = new Uint8Array(HEADER_BYTES);
  #hdrLen = 0;
  #buf: Uint8Array = EMPTY;
  #bodyKind = -1;
  #bodyLen = 0;
  #bodyHave = 0;
  #cur: Uint8Array | null = null;
  #pos = 0;
  #failed: FramingError | null = null;

  constructor(opts: DecoderOptions) {
    this.#mask = opts.from === "host" ? 1 : opts.from === "guest" ? 2 : 3;
  }

  /** Whether a partial message (or partial header) is held. */
  get partial(): boolean {
    return this.#hdrLen > 0 || this.#bodyKind >= 0;
  }

  /** How many bytes of the held partial message arrived, header included. */
  get partialBytes(): number {
    return this.#bodyKind >= 0 ? HEADER_BYTES + this.#bodyHave : this.#hdrLen;
  }

  /** The capacity of the reassembly buffer (it grows to the largest partial body seen, up to the largest limit). */
  get bufferCapacity(): number {
    return this.#buf.length;
  }

  /** The failure that ended this decoder, if any. */
  get failure(): FramingError | null {
    return this.#failed;
  }

  /** Hands the decoder the stream's next bytes; it keeps a reference until {@link next} returns null. */
  feed(chunk: Uint8Array): void {
    if (this.#failed) throw this.#failed;
    if (this.#cur !== null && this.#pos < this.#cur.length) {
      throw new Error("Decoder.feed: the previous chunk was not drained with next()");
    }
    this.#cur = chunk.length > 0 ? chunk : null;
    this.#pos = 0;
  }

  /** The next whole message of the fed bytes, or null once they are used up (a partial message is then held). */
  next(): Frame | null {
    let out: Frame | null = null;
    this.#step((kind, buf, start, end) => {
      out = { kind, body: buf.subarray(start, end) };
    }, true);
    return out;
  }

  /** Feeds `chunk` and hands every whole message to `onFrame` (views valid during the call). */
  push(chunk: Uint8Array, onFrame: (frame: Frame) => void): void {
    this.feed(chunk);
    for (let f = this.next(); f !== null; f = this.next()) onFrame(f);
  }

  /** The hot path: feeds `chunk` and hands every whole message to `onFrame` without allocating per message. */
  pushRaw(chunk: Uint8Array, onFrame: RawFrameHandler): void {
    this.feed(chunk);
    this.#step(onFrame, false);
  }

  /** The end of the stream: a held partial message is a truncated one, which is a failure. */
  finish(): void {
    if (this.#failed) throw this.#failed;
    if (this.partial) {
      throw this.#fail(new FramingError("truncated", `the stream ended inside a message (${this.partialBytes} bytes)`));
    }
  }

  /**
   * Drops the partial message and any fed bytes not yet taken, as a reset of the session requires: the next
   * epoch starts with a new message. Returns how many bytes were dropped. A failed decoder stays failed.
   */
  reset(): number {
    const dropped = this.partialBytes + (this.#cur ? this.#cur.length - this.#pos : 0);
    this.#hdrLen = 0;
    this.#bodyKind = -1;
    this.#bodyLen = 0;
    this.#bodyHave = 0;
    this.#cur = null;
    this.#pos = 0;
    return dropped;
  }

  #fail(e: FramingError): FramingError {
    this.#failed = e;
    this.#cur = null;
    return e;
  }

  #check(len: number, kind: number): void {
    const limit = LIMITS[kind]!;
    if (limit < 0) throw this.#fail(new FramingError("unknown-kind", `kind ${kind} is not assigned`, kind));
    if ((SENDERS[kind]! & this.#mask) === 0) {
      throw this.#fail(new FramingError("wrong-direction", `kind ${kind} is not sent from this side`, kind));
    }
    if (len > limit) {
      throw this.#fail(new FramingError("oversized", `kind ${kind} holds at most ${limit} bytes, not ${len}`, kind));
    }
  }

  #startBody(kind: number, len: number): void {
    if (this.#buf.length < len) {
      let cap = Math.max(this.#buf.length * 2, 4096);
      while (cap < len) cap *= 2;
      this.#buf = new Uint8Array(Math.min(cap, MAX_BODY));
    }
    this.#bodyKind = kind;
    this.#bodyLen = len;
    this.#bodyHave = 0;
  }

  /** Emits messages; with `one`, stops after the first. */
  #step(onFrame: RawFrameHandler, one: boolean): void {
    if (this.#failed) throw this.#failed;
    const cur = this.#cur;
    if (cur === null) return;
    let pos = this.#pos;
    const n = cur.length;
    // A partial header held from an earlier chunk.
    if (this.#hdrLen > 0) {
      const take = Math.min(HEADER_BYTES - this.#hdrLen, n - pos);
      this.#hdr.set(cur.subarray(pos, pos + take), this.#hdrLen);
      this.#hdrLen += take;
      pos += take;
      if (this.#hdrLen < HEADER_BYTES) return this.#drained();
      const h = this.#hdr;
      const len = (h[0]! | (h[1]! << 8) | (h[2]! << 16) | (h[3]! << 24)) >>> 0;
      const kind = h[4]!;
      this.#hdrLen = 0;
      this.#check(len, kind);
      if (len === 0) {
        this.#pos = pos;
        onFrame(kind, EMPTY, 0, 0);
        if (one) return;
      } else {
        this.#startBody(kind, len);
      }
    }
    // A partial body.
    if (this.#bodyKind >= 0) {
      const take = Math.min(this.#bodyLen - this.#bodyHave, n - pos);
      this.#buf.set(cur.subarray(pos, pos + take), this.#bodyHave);
      this.#bodyHave += take;
      pos += take;
      if (this.#bodyHave < this.#bodyLen) return this.#drained();
      const kind = this.#bodyKind;
      const len = this.#bodyLen;
      this.#bodyKind = -1;
      this.#pos = pos;
      onFrame(kind, this.#buf, 0, len);
      if (one) return;
    }
    // Whole messages straight from the chunk.
    while (n - pos >= HEADER_BYTES) {
      const len = (cur[pos]! | (cur[pos + 1]! << 8) | (cur[pos + 2]! << 16) | (cur[pos + 3]! << 24)) >>> 0;
      const kind = cur[pos + 4]!;
      const limit = LIMITS[kind]!;
      if (limit < 0 || len > limit || (SENDERS[kind]! & this.#mask) === 0) this.#check(len, kind);
      const start = pos + HEADER_BYTES;
      const end = start + len;
      if (end > n) {
        this.#startBody(kind, len);
        this.#buf.set(cur.subarray(start, n), 0);
        this.#bodyHave = n - start;
        return this.#drained();
      }
      pos = end;
      this.#pos = pos;
      onFrame(kind, cur, start, end);
      if (one) return;
    }
    if (pos < n) {
      this.#hdr.set(cur.subarray(pos, n), 0);
      this.#hdrLen = n - pos;
    }
    this.#drained();
  }

  #drained(): void {
    this.#cur = null;
    this.#pos = 0;
  }
}
