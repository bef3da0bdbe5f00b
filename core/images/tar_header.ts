/**
 * Decoding of one 512-byte tar header block (ustar, GNU and v7) and of PAX extended-header records, with every
 * numeric field bounded and checked before anyone allocates by it.
 *
 * @module
 */
import { UnsafeBundle } from "./errors.ts";

/** The tar block size. */
export const BLOCK = 512;

/** One decoded header block; names are still raw bytes, decoded by the caller once extensions are applied. */
export interface TarHeader {
  /** `name` (and for ustar `prefix/name`) as raw bytes up to the first NUL. */
  readonly name: Uint8Array;
  /** The ustar prefix, empty unless the magic is POSIX `ustar\0`. */
  readonly prefix: Uint8Array;
  /** The type flag as one character; the old regular-file flag NUL is returned as `"0"`. */
  readonly typeflag: string;
  /** The size field; `-1` when the field holds a value past `Number.MAX_SAFE_INTEGER`. */
  readonly size: number;
}

/** Whether all 512 bytes are zero (an end-of-archive block). */
export function isZeroBlock(b: Uint8Array): boolean {
  for (let i = 0; i < BLOCK; i++) if (b[i] !== 0) return false;
  return true;
}

function _cstring(b: Uint8Array, off: number, len: number): Uint8Array {
  const f = b.subarray(off, off + len);
  const z = f.indexOf(0);
  return z < 0 ? f : f.subarray(0, z);
}

/** Parses an octal field (leading spaces, then digits, then NUL/space terminators) or GNU base-256. */
export function parseNumeric(b: Uint8Array, off: number, len: number, field: string): number {
  const f = b.subarray(off, off + len);
  if (f.length > 0 && (f[0]! & 0x80) !== 0) {
    if (f[0] === 0xff) throw new UnsafeBundle("bad-header", `negative base-256 ${field}`);
    let v = f[0]! & 0x7f;
    for (let i = 1; i < f.length; i++) {
      v = v * 256 + f[i]!;
      if (v > Number.MAX_SAFE_INTEGER) return -1;
    }
    return v;
  }
  let i = 0;
  while (i < f.length && f[i] === 0x20) i++;
  let v = 0;
  let digits = 0;
  for (; i < f.length; i++) {
    const c = f[i]!;
    if (c === 0 || c === 0x20) break;
    if (c < 0x30 || c > 0x37) throw new UnsafeBundle("bad-header", `non-octal byte in the ${field} field`);
    v = v * 8 + (c - 0x30);
    digits++;
  }
  for (; i < f.length; i++) {
    if (f[i] !== 0 && f[i] !== 0x20) throw new UnsafeBundle("bad-header", `garbage after the ${field} field`);
  }
  if (digits === 0 && field === "checksum") throw new UnsafeBundle("bad-header", "empty checksum field");
  return v;
}

/** Decodes and verifies one header block: checksum (unsigned, or the signed sum old tars wrote) and fields. */
export function decodeHeader(b: Uint8Array): TarHeader {
  const want = parseNumeric(b, 148, 8, "checksum");
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const c = i >= 148 && i < 156 ? 0x20 : b[i]!;
    unsigned += c;
    signed += c > 127 ? c - 256 : c;
  }
  if (want !== unsigned && want !== signed) {
    throw new UnsafeBundle("bad-checksum", `header checksum ${want} does not match ${unsigned}`);
  }
  const t = b[156]!;
  const typeflag = t === 0 ? "0" : String.fromCharCode(t);
  const size = parseNumeric(b, 124, 12, "size");
  const posix = b[257] === 0x75 && b[258] === 0x73 && b[259] === 0x74 && b[260] === 0x61 && b[261] === 0x72 &&
    b[262] === 0;
  return { name: _cstring(b, 0, 100), prefix: posix ? _cstring(b, 345, 155) : new Uint8Array(0), typeflag, size };
}

const _dec = new TextDecoder("utf-8", { fatal: true });

/** Decodes a name as strict UTF-8 (`bad-name` otherwise). */
export function decodeName(b: Uint8Array): string {
  try {
    return _dec.decode(b);
  } catch (e) {
    throw new UnsafeBundle("bad-name", "a member name is not valid UTF-8", { cause: e });
  }
}

/** Parses PAX records (`"%d %s=%s\n"`), refusing malformed lengths; keys and values are returned as strings. */
export function parsePax(data: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  let pos = 0;
  while (pos < data.length) {
    if (data[pos] === 0) {
      // NUL padding after the last record: tolerated only if the rest is all NUL.
      for (let i = pos; i < data.length; i++) {
        if (data[i] !== 0) throw new UnsafeBundle("bad-header", "garbage after the PAX records");
      }
      break;
    }
    let len = 0;
    let i = pos;
    while (i < data.length && data[i]! >= 0x30 && data[i]! <= 0x39 && i - pos < 8) len = len * 10 + (data[i++]! - 0x30);
    if (
      i === pos || data[i] !== 0x20 || len <= i - pos + 1 || pos + len > data.length || data[pos + len - 1] !== 0x0a
    ) {
      throw new UnsafeBundle("bad-header", "malformed PAX record");
    }
    const rec = data.subarray(i + 1, pos + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq <= 0) throw new UnsafeBundle("bad-header", "PAX record without a key");
    const key = decodeName(rec.subarray(0, eq));
    const value = decodeName(rec.subarray(eq + 1));
    out.set(key, value);
    pos += len;
  }
  return out;
}
