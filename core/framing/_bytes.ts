/**
 * Little-endian readers and writers for the body encodings; a reader refuses reading past the body with the
 * body's {@link BodyError}.
 *
 * @module
 */
import { BodyError } from "./errors.ts";

/** Reads a body front to back; every read is bounded by what is left. */
export class BodyReader {
  readonly #view: DataView;
  #pos = 0;
  constructor(readonly bytes: Uint8Array, readonly body: string) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get left(): number {
    return this.bytes.length - this.#pos;
  }
  #need(n: number, what: string): number {
    if (this.left < n) throw new BodyError(this.body, `${what}: needs ${n} bytes, ${this.left} left`);
    const p = this.#pos;
    this.#pos += n;
    return p;
  }
  u8(what: string): number {
    return this.#view.getUint8(this.#need(1, what));
  }
  u16(what: string): number {
    return this.#view.getUint16(this.#need(2, what), true);
  }
  u32(what: string): number {
    return this.#view.getUint32(this.#need(4, what), true);
  }
  i32(what: string): number {
    return this.#view.getInt32(this.#need(4, what), true);
  }
  u64(what: string): bigint {
    return this.#view.getBigUint64(this.#need(8, what), true);
  }
  /** A u64 that must fit a JavaScript number exactly (timers in milliseconds). */
  safeU64(what: string): number {
    const v = this.u64(what);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new BodyError(this.body, `${what} ${v} is out of range`);
    return Number(v);
  }
  /** A view of the next `n` bytes. */
  take(n: number, what: string): Uint8Array {
    const p = this.#need(n, what);
    return this.bytes.subarray(p, p + n);
  }
  rest(): Uint8Array {
    return this.take(this.left, "rest");
  }
  /** Refuses trailing bytes. */
  end(): void {
    if (this.left !== 0) throw new BodyError(this.body, `${this.left} trailing bytes`);
  }
}

/** Builds a body of a known size. */
export class BodyWriter {
  readonly bytes: Uint8Array;
  readonly #view: DataView;
  #pos = 0;
  constructor(size: number) {
    this.bytes = new Uint8Array(size);
    this.#view = new DataView(this.bytes.buffer);
  }
  u8(v: number): this {
    this.#view.setUint8(this.#pos, v);
    this.#pos += 1;
    return this;
  }
  u16(v: number): this {
    this.#view.setUint16(this.#pos, v, true);
    this.#pos += 2;
    return this;
  }
  u32(v: number): this {
    this.#view.setUint32(this.#pos, v, true);
    this.#pos += 4;
    return this;
  }
  i32(v: number): this {
    this.#view.setInt32(this.#pos, v, true);
    this.#pos += 4;
    return this;
  }
  u64(v: bigint | number): this {
    this.#view.setBigUint64(this.#pos, BigInt(v), true);
    this.#pos += 8;
    return this;
  }
  bytesOf(b: Uint8Array): this {
    this.bytes.set(b, this.#pos);
    this.#pos += b.length;
    return this;
  }
  /** The body; its size must be what was written. */
  done(): Uint8Array {
    if (this.#pos !== this.bytes.length) throw new RangeError(`body size ${this.bytes.length}, wrote ${this.#pos}`);
    return this.bytes;
  }
}

const DECODER = new TextDecoder("utf-8", { fatal: true });
/** Strict UTF-8, refused with the body's error. */
export function utf8(bytes: Uint8Array, body: string): string {
  try {
    return DECODER.decode(bytes);
  } catch (e) {
    throw new BodyError(body, "not UTF-8", { cause: e });
  }
}

/** UTF-8 bytes of `s`. */
export const encodeUtf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
