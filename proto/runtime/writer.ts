/**
 * The wire-format writer the message classes' encoders drive (`$Writer`): the methods `proto/classes.ts` and
 * `proto/gen/bcd_static.js` call, writing the bytes protobufjs 8 writes for the same values (`runtime_test.ts`
 * compares them field type by field type), into one growing buffer. A sub-message reserves one byte for its length
 * (`fork`) and `ldelim` moves the body when the length needs more.
 *
 * Allocation is what a small message costs (a new `ArrayBuffer` takes about as long as encoding a `Hello`), so, as
 * protobufjs does:
 *
 * - the working buffer is reused: `finish` hands it to the next writer (one spare, up to {@link SPARE_MAX} bytes) and
 *   leaves its own writer empty;
 * - `finish` returns a copy of exactly the bytes written; up to {@link SLAB_MAX} bytes the copy is a view into a shared
 *   8 KiB slab (its own bytes, which no later write touches; only `.buffer` is shared), above that its own buffer.
 *
 * @module
 */

import { LongBits, SPLIT, splitNumber } from "./long_bits.ts";
import { base64Decode, base64Length } from "./base64.ts";
import { utf8Length, utf8Write, utf8WriteLong } from "./utf8.ts";

const _F64 = new Float64Array(1);
const _F64_BYTES = new Uint8Array(_F64.buffer);
/** Whether this machine stores a double's bytes little-endian (the wire's order). */
const _LE = new Uint8Array(new Float64Array([-0]).buffer)[7] === 0x80;

/** The largest working buffer `finish` keeps for the next writer. */
export const SPARE_MAX = 64 * 1024;
/** The largest result `finish` places in the shared slab. */
export const SLAB_MAX = 4096;
const _SLAB_SIZE = 8192;
const _EMPTY = new Uint8Array(0);

/** A working buffer no writer holds (`finish` returned it), or null. */
let _spare: Uint8Array | null = null;
let _slab = new Uint8Array(_SLAB_SIZE);
let _slabPos = _SLAB_SIZE;

/** A copy of `src`, in the slab when it is small. */
function _copy(src: Uint8Array): Uint8Array {
  const size = src.length;
  if (size > SLAB_MAX || size === 0) return src.slice();
  if (_slabPos + size > _SLAB_SIZE) {
    _slab = new Uint8Array(_SLAB_SIZE);
    _slabPos = 0;
  }
  const out = _slab.subarray(_slabPos, _slabPos + size);
  out.set(src);
  _slabPos = (_slabPos + size + 7) & ~7; // 8-byte aligned, as protobufjs' pool
  return out;
}

function _varint32Size(value: number): number {
  return value < 128 ? 1 : value < 16384 ? 2 : value < 2097152 ? 3 : value < 268435456 ? 4 : 5;
}

function _writeVarint32(value: number, buf: Uint8Array, pos: number): number {
  while (value > 127) {
    buf[pos++] = value & 127 | 128;
    value >>>= 7;
  }
  buf[pos] = value;
  return pos + 1;
}

// The halves of the last 64-bit value split by _bits (module state: no object per number written).
let _lo = 0, _hi = 0;

/** Splits a 64-bit field's value into `_lo`/`_hi`: numbers by {@link splitNumber} (no object), the rest by {@link LongBits.from}. */
function _bits(value: unknown): void {
  if (typeof value !== "number") {
    const bits = LongBits.from(value);
    _lo = bits.lo, _hi = bits.hi;
    return;
  }
  splitNumber(value);
  _lo = SPLIT.lo, _hi = SPLIT.hi;
}

function _writeVarint64(lo: number, hi: number, buf: Uint8Array, pos: number): number {
  while (hi) {
    buf[pos++] = lo & 127 | 128;
    lo = (lo >>> 7 | hi << 25) >>> 0;
    hi >>>= 7;
  }
  while (lo > 127) {
    buf[pos++] = lo & 127 | 128;
    lo = lo >>> 7;
  }
  buf[pos] = lo;
  return pos + 1;
}

/** Writes protobuf wire format. */
export class Writer {
  /** The size of a new writer's buffer. */
  static initialBufferSize = 128;

  /** The write position: the bytes written so far. */
  pos = 0;
  /** The buffer, grown by doubling: the spare one when no other writer holds it. */
  buf: Uint8Array;
  /** Where each open `fork` reserved its length byte. */
  states: number[] | null = null;

  constructor() {
    if (_spare) {
      this.buf = _spare;
      _spare = null;
    } else this.buf = new Uint8Array(Writer.initialBufferSize);
  }

  /** A new writer. */
  static create(): Writer {
    return new Writer();
  }

  /** Makes room for `n` more bytes. */
  private _reserve(n: number): void {
    const need = this.pos + n;
    if (need > this.buf.length) {
      let size = Math.max(this.buf.length * 2, Writer.initialBufferSize);
      if (size < need) size = need;
      const buf = new Uint8Array(size);
      buf.set(this.buf.subarray(0, this.pos));
      this.buf = buf;
    }
  }

  /** Writes at `lenPos` the length `len` of the `len` bytes that follow one reserved byte, moving them if needed. */
  private _delim(lenPos: number, len: number): this {
    const n = _varint32Size(len);
    if (n > 1) this.buf.copyWithin(lenPos + n, lenPos + 1, lenPos + 1 + len);
    _writeVarint32(len, this.buf, lenPos);
    this.pos = lenPos + n + len;
    return this;
  }

  /** An unsigned 32-bit varint (`value >>> 0`). */
  uint32(value: number): this {
    this._reserve(5);
    this.pos = _writeVarint32(value >>> 0, this.buf, this.pos);
    return this;
  }

  /** A signed 32-bit varint: a negative value takes 10 bytes, as the spec says. */
  int32(value: number): this {
    if ((value |= 0) < 0) {
      this._reserve(10);
      _bits(value);
      this.pos = _writeVarint64(_lo, _hi, this.buf, this.pos);
      return this;
    }
    return this.uint32(value);
  }

  /** A 64-bit varint (two's complement when negative); see {@link LongBits.from} for what it accepts. */
  uint64(value: unknown): this {
    _bits(value);
    this._reserve(10);
    this.pos = _writeVarint64(_lo, _hi, this.buf, this.pos);
    return this;
  }

  /** A signed 64-bit varint: the same bytes as {@link uint64}. */
  int64(value: unknown): this {
    return this.uint64(value);
  }

  /** A boolean varint. */
  bool(value: unknown): this {
    this._reserve(1);
    this.buf[this.pos++] = value ? 1 : 0;
    return this;
  }

  /** A little-endian IEEE 754 double. */
  double(value: number): this {
    this._reserve(8);
    _F64[0] = value;
    const buf = this.buf, pos = this.pos;
    if (_LE) { for (let i = 0; i < 8; ++i) buf[pos + i] = _F64_BYTES[i]!; }
    else for (let i = 0; i < 8; ++i) buf[pos + i] = _F64_BYTES[7 - i]!;
    this.pos += 8;
    return this;
  }

  /** A length-delimited byte string; a string is read as base64 (as protobufjs reads it). */
  bytes(value: Uint8Array | string): this {
    let len = value.length >>> 0;
    if (!len) {
      this._reserve(1);
      this.buf[this.pos++] = 0;
      return this;
    }
    if (typeof value === "string") {
      const decoded = new Uint8Array(len = base64Length(value));
      base64Decode(value, decoded, 0);
      value = decoded;
    }
    this.uint32(len);
    this._reserve(len);
    this.buf.set(value, this.pos);
    this.pos += len;
    return this;
  }

  /** Bytes as they are, no tag or length (a kept unknown field). */
  raw(value: Uint8Array): this {
    const len = value.length >>> 0;
    if (!len) return this;
    this._reserve(len);
    this.buf.set(value, this.pos);
    this.pos += len;
    return this;
  }

  /** A length-delimited UTF-8 string (a lone surrogate is written as U+FFFD; see `utf8.ts`). */
  string(value: string): this {
    const n = value.length;
    if (!n) {
      this._reserve(1);
      this.buf[this.pos++] = 0;
      return this;
    }
    if (n < 0x80) {
      this._reserve(n * 3 + 5);
      const lenPos = this.pos;
      return this._delim(lenPos, utf8Write(value, this.buf, lenPos + 1));
    }
    const len = utf8Length(value);
    this.uint32(len);
    this._reserve(len);
    if (len === n) {
      const buf = this.buf, pos = this.pos;
      for (let i = 0; i < n; ++i) buf[pos + i] = value.charCodeAt(i);
    } else utf8WriteLong(value, this.buf, this.pos, len);
    this.pos += len;
    return this;
  }

  /** A packed run of uint32 varints. */
  uint32s(values: readonly number[]): this {
    const n = values.length;
    this._reserve(n * 5 + 5);
    const buf = this.buf, lenPos = this.pos;
    let p = lenPos + 1;
    for (let i = 0; i < n; ++i) p = _writeVarint32(values[i]! >>> 0, buf, p);
    return this._delim(lenPos, p - lenPos - 1);
  }

  /** A packed run of 64-bit varints; see {@link LongBits.from} for what each element may be. */
  uint64s(values: readonly unknown[]): this {
    const n = values.length;
    this._reserve(n * 10 + 5);
    const buf = this.buf, lenPos = this.pos;
    let p = lenPos + 1;
    for (let i = 0; i < n; ++i) {
      _bits(values[i]);
      p = _writeVarint64(_lo, _hi, buf, p);
    }
    return this._delim(lenPos, p - lenPos - 1);
  }

  /** Opens a length-delimited value: reserves one byte for its length. */
  fork(): this {
    this._reserve(1);
    (this.states ??= []).push(this.pos);
    this.pos += 1;
    return this;
  }

  /** Closes the last `fork`: writes its length there (moving the body when the length needs more than a byte). */
  ldelim(): this {
    const lenPos = this.states?.pop();
    if (lenPos === undefined) throw new Error("ldelim() without fork()");
    const len = this.pos - lenPos - 1;
    const vlen = _varint32Size(len);
    if (vlen > 1) {
      this._reserve(vlen - 1);
      this.buf.copyWithin(lenPos + vlen, lenPos + 1, lenPos + 1 + len);
      this.pos += vlen - 1;
      _writeVarint32(len, this.buf, lenPos);
    } else this.buf[lenPos] = len;
    return this;
  }

  /**
   * A copy of exactly the bytes written (see the module doc for where it lives). The writer is left empty: its buffer
   * goes to the next writer, and what it writes next starts a new message.
   */
  finish(): Uint8Array {
    const buf = this.buf;
    const out = _copy(buf.subarray(0, this.pos));
    this.buf = _EMPTY;
    this.pos = 0;
    this.states = null;
    if (buf.length > 0 && buf.length <= SPARE_MAX && (!_spare || _spare.length < buf.length)) _spare = buf;
    return out;
  }
}
