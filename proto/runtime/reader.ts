/**
 * The wire-format reader the message classes' decoders drive (`$Reader`): the methods `proto/classes.ts` and
 * `proto/gen/bcd_static.js` call, with protobufjs' semantics and error messages (`wire.ts` classifies by them) and
 * bcd's bounds:
 *
 * - every read checks the bytes left first and throws `RangeError("index out of range: …")` past the end; a length
 *   prefix is checked against the bytes left before anything is read or built from it;
 * - a varint longer than 10 bytes, a tag or a length that does not fit 32 bits is an `Error` naming the encoding;
 * - 64-bit reads refuse a value beyond `Number.MAX_SAFE_INTEGER` with {@link UnsafeIntegerError};
 * - strings decode with a fatal UTF-8 decoder (`utf8.ts`);
 * - nested groups skip at most {@link Reader.recursionLimit} deep ("max depth exceeded").
 *
 * Bytes fields are views of the input (no copy), as protobufjs 8 gives them.
 *
 * @module
 */

import { utf8ReadStrict } from "./utf8.ts";

/** A 64-bit field held a value a JavaScript number cannot represent exactly. */
export class UnsafeIntegerError extends RangeError {
  /** The reason string, as `WireDecodeError` reports it. */
  readonly reason = "unsafe-integer";
  /** The rounded value that was read. */
  readonly approximate: number;
  constructor(approximate: number) {
    super(`64-bit integer ${approximate} is beyond Number.MAX_SAFE_INTEGER; refused rather than rounded`);
    this.name = "UnsafeIntegerError";
    this.approximate = approximate;
  }
}

const _2_32 = 4294967296;
const _F64 = new Float64Array(1);
const _F64_BYTES = new Uint8Array(_F64.buffer);
/** Whether this machine stores a double's bytes little-endian (the wire's order). */
const _LE = new Uint8Array(new Float64Array([-0]).buffer)[7] === 0x80;

function _outOfRange(r: Reader, want?: number): RangeError {
  return new RangeError(`index out of range: ${r.pos} + ${want || 1} > ${r.len}`);
}

/** A varint of at most 4 bytes with fewer than 5 bytes left (a longer one cannot fit). */
function _varint32NearEnd(r: Reader): number {
  let value = 0;
  for (let i = 0; i < 4; ++i) {
    if (r.pos >= r.len) throw _outOfRange(r);
    const b = r.buf[r.pos++]!;
    value = (value | (b & 127) << i * 7) >>> 0;
    if (b < 128) return value;
  }
  throw _outOfRange(r);
}

// The halves of the last 64-bit varint read (kept in module state: no object per read).
let _lo = 0, _hi = 0;

function _varint64(r: Reader): void {
  const buf = r.buf;
  let lo = 0, hi = 0, i = 0, b: number;
  for (; i < 4; ++i) {
    if (r.pos >= r.len) throw _outOfRange(r);
    b = buf[r.pos++]!;
    lo = (lo | (b & 127) << i * 7) >>> 0;
    if (b < 128) {
      _lo = lo, _hi = 0;
      return;
    }
  }
  if (r.pos >= r.len) throw _outOfRange(r);
  b = buf[r.pos++]!;
  lo = (lo | (b & 127) << 28) >>> 0;
  hi = (b & 127) >> 4;
  if (b < 128) {
    _lo = lo, _hi = hi;
    return;
  }
  for (i = 0; i < 5; ++i) {
    if (r.pos >= r.len) throw _outOfRange(r);
    b = buf[r.pos++]!;
    hi = (hi | (b & 127) << i * 7 + 3) >>> 0;
    if (b < 128) {
      _lo = lo, _hi = hi;
      return;
    }
  }
  throw new Error("invalid varint encoding");
}

function _safe(n: number): number {
  if (!Number.isSafeInteger(n)) throw new UnsafeIntegerError(n);
  return n;
}

function _signed(lo: number, hi: number): number {
  if (!(hi >>> 31)) return lo + hi * _2_32;
  lo = ~lo + 1 >>> 0;
  hi = ~hi >>> 0;
  if (!lo) hi = hi + 1 >>> 0;
  return -(lo + hi * _2_32);
}

/** Reads protobuf wire format from a `Uint8Array`. */
export class Reader {
  /** How deep nested groups may be skipped, and messages nested (the generated decoders read it). */
  static recursionLimit = 100;
  /** The default of {@link Reader.discardUnknown} for new readers. */
  static discardUnknown = true;

  /** The bytes read. */
  buf: Uint8Array;
  /** The read position. */
  pos: number;
  /** The end of the bytes the current message may read (a nested decode narrows it). */
  len: number;
  /** Whether decoders drop unknown fields (true) or keep their bytes in `$unknowns`. */
  discardUnknown: boolean;

  constructor(buf: Uint8Array) {
    this.buf = buf;
    this.pos = 0;
    this.len = buf.length;
    this.discardUnknown = Reader.discardUnknown;
  }

  /** A reader over `buf` (a `Uint8Array`, or an array of byte values, copied). */
  static create(buf: Uint8Array | number[]): Reader {
    if (Array.isArray(buf)) buf = new Uint8Array(buf);
    if (buf instanceof Uint8Array) return new Reader(buf);
    throw new Error("illegal buffer");
  }

  /** The bytes `[start, end)` of the input, without moving. */
  raw(start: number, end: number): Uint8Array {
    return this.buf.subarray(start, end);
  }

  /** A varint as an unsigned 32-bit value (longer varints keep their low 32 bits). */
  uint32(): number {
    if (this.len - this.pos < 5) {
      if (this.pos >= this.len) throw _outOfRange(this);
      if (this.buf[this.pos]! >= 128) return _varint32NearEnd(this);
    }
    const buf = this.buf;
    let pos = this.pos;
    let value = (buf[pos]! & 127) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 127) << 7) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 127) << 14) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 127) << 21) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 15) << 28) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    for (let i = 0; i < 5; ++i) {
      if (pos >= this.len) {
        this.pos = pos;
        throw _outOfRange(this);
      }
      if (buf[pos++]! < 128) return (this.pos = pos, value);
    }
    this.pos = pos;
    throw new Error("invalid varint encoding");
  }

  /** A field tag: a varint that fits 32 bits in at most 5 bytes. */
  tag(): number {
    if (this.len - this.pos < 5) {
      if (this.pos >= this.len) throw _outOfRange(this);
      if (this.buf[this.pos]! >= 128) return _varint32NearEnd(this);
    }
    const buf = this.buf;
    let pos = this.pos;
    let value = (buf[pos]! & 127) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 127) << 7) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 127) << 14) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 127) << 21) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value);
    value = (value | (buf[pos]! & 15) << 28) >>> 0;
    const last = buf[pos]!;
    this.pos = pos + 1;
    if (last < 128 && (last & 112) === 0) return value;
    throw new Error("invalid tag encoding");
  }

  /** A length prefix: a varint below 2^31 in at most 5 bytes. */
  size(): number {
    if (this.len - this.pos < 5) {
      if (this.pos >= this.len) throw _outOfRange(this);
      if (this.buf[this.pos]! >= 128) return _varint32NearEnd(this);
    }
    const buf = this.buf;
    let pos = this.pos;
    const value0 = (buf[pos]! & 127) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value0);
    const value1 = (value0 | (buf[pos]! & 127) << 7) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value1);
    const value2 = (value1 | (buf[pos]! & 127) << 14) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value2);
    const value3 = (value2 | (buf[pos]! & 127) << 21) >>> 0;
    if (buf[pos++]! < 128) return (this.pos = pos, value3);
    const last = buf[pos]!;
    this.pos = pos + 1;
    if (last > 7) throw new Error("invalid length encoding");
    return (value3 | last << 28) >>> 0;
  }

  /** A varint as a signed 32-bit value. */
  int32(): number {
    return this.uint32() | 0;
  }

  /** A varint as a boolean (any non-zero bit is true). */
  bool(): boolean {
    let value = false;
    for (let i = 0; i < 10; ++i) {
      if (this.pos >= this.len) throw _outOfRange(this);
      const b = this.buf[this.pos++]!;
      if (b & 127) value = true;
      if (b < 128) return value;
    }
    throw new Error("invalid varint encoding");
  }

  /** A varint as an unsigned 64-bit number; refuses values beyond 2^53 - 1. */
  uint64(): number {
    _varint64(this);
    return _safe(_lo + _hi * _2_32);
  }

  /** A varint as a signed 64-bit number; refuses values beyond ±(2^53 - 1). */
  int64(): number {
    _varint64(this);
    return _safe(_signed(_lo, _hi));
  }

  /** A little-endian IEEE 754 double. */
  double(): number {
    if (this.pos + 8 > this.len) throw _outOfRange(this, 4);
    const buf = this.buf, pos = this.pos;
    if (_LE) { for (let i = 0; i < 8; ++i) _F64_BYTES[i] = buf[pos + i]!; }
    else for (let i = 0; i < 8; ++i) _F64_BYTES[7 - i] = buf[pos + i]!;
    this.pos += 8;
    return _F64[0]!;
  }

  /** A length-delimited byte string: a view of the input, no copy. */
  bytes(): Uint8Array {
    const length = this.size(), start = this.pos, end = start + length;
    if (end > this.len) throw _outOfRange(this, length);
    this.pos = end;
    return this.buf.subarray(start, end);
  }

  /** A length-delimited string; throws a `TypeError` when it is not valid UTF-8. */
  stringVerify(): string {
    const length = this.size(), start = this.pos, end = start + length;
    if (end > this.len) throw _outOfRange(this, length);
    this.pos = end;
    return utf8ReadStrict(this.buf, start, end);
  }

  /** A packed run of uint32 varints, appended to `array`. */
  uint32s(array: number[] = []): number[] {
    const end = this.size() + this.pos, len = this.len;
    if (end > len) throw _outOfRange(this, end - this.pos);
    this.len = end;
    while (this.pos < end) array.push(this.uint32());
    if (this.pos !== end) throw new RangeError("index out of range");
    this.len = len;
    return array;
  }

  /** A packed run of uint64 varints, appended to `array`; refuses values beyond 2^53 - 1. */
  uint64s(array: number[] = []): number[] {
    const end = this.size() + this.pos, len = this.len;
    if (end > len) throw _outOfRange(this, end - this.pos);
    this.len = end;
    while (this.pos < end) array.push(this.uint64());
    if (this.pos !== end) throw new RangeError("index out of range");
    this.len = len;
    return array;
  }

  /** Skips `length` bytes, or one varint when no length is given. */
  skip(length?: number): this {
    if (typeof length === "number") {
      if (this.pos + length > this.len) throw _outOfRange(this, length);
      this.pos += length;
    } else {
      do {
        if (this.pos >= this.len) throw _outOfRange(this);
      } while (this.buf[this.pos++]! & 128);
    }
    return this;
  }

  /** Skips one value of `wireType` (a group up to its end tag, which must name `fieldNumber`). */
  skipType(wireType: number, depth = 0, fieldNumber?: number): this {
    if (depth > Reader.recursionLimit) throw new Error("max depth exceeded");
    if (fieldNumber === 0) throw new Error("illegal tag: field number 0");
    switch (wireType) {
      case 0:
        this.skip();
        break;
      case 1:
        this.skip(8);
        break;
      case 2:
        this.skip(this.size());
        break;
      case 3:
        for (;;) {
          const tag = this.tag();
          const nested = tag >>> 3;
          wireType = tag & 7;
          if (!nested) throw new Error("illegal tag: field number 0");
          if (wireType === 4) {
            if (fieldNumber !== undefined && nested !== fieldNumber) throw new Error("invalid end group tag");
            break;
          }
          this.skipType(wireType, depth + 1, nested);
        }
        break;
      case 5:
        this.skip(4);
        break;
      default:
        throw new Error(`invalid wire type ${wireType} at offset ${this.pos}`);
    }
    return this;
  }
}
