/**
 * UTF-8 for string fields, on the web platform's `TextEncoder`/`TextDecoder` with a plain loop for short strings (a
 * call into the encoder costs more than a short loop; protobufjs found the same).
 *
 * - Encoding follows the WHATWG encoder exactly, in the loop too: a lone surrogate (which has no UTF-8 form) becomes
 *   U+FFFD (`EF BF BD`). protobufjs wrote such a surrogate as its 3-byte CESU form, bytes no UTF-8 decoder accepts, so
 *   the peer refused the frame; now every encoded string is valid UTF-8. The length is 3 bytes either way.
 * - Decoding is fatal: proto3 requires valid UTF-8, and a lenient decoder would let two different byte strings read as
 *   the same name. Invalid input throws the decoder's `TypeError` ("The encoded data was not valid for encoding utf-8").
 *
 * @module
 */

const _ENCODER = new TextEncoder();
const _DECODER = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Below this many bytes a decode runs the ASCII loop first (protobufjs' threshold). */
const _DECODER_MIN = 64;

/** The number of bytes {@link utf8Write} writes for `s`. */
export function utf8Length(s: string): number {
  let len = 0;
  for (let i = 0; i < s.length; ++i) {
    const c = s.charCodeAt(i);
    if (c < 0x80) len += 1;
    else if (c < 0x800) len += 2;
    else if ((c & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      ++i;
      len += 4;
    } else len += 3;
  }
  return len;
}

/** Writes `s` as UTF-8 into `buf` at `pos` (room for `3 * s.length` bytes is the caller's); returns the bytes written. */
export function utf8Write(s: string, buf: Uint8Array, pos: number): number {
  const start = pos;
  for (let i = 0; i < s.length; ++i) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[pos++] = c;
    } else if (c < 0x800) {
      buf[pos++] = c >> 6 | 0xc0;
      buf[pos++] = c & 0x3f | 0x80;
    } else if ((c & 0xf800) !== 0xd800) {
      buf[pos++] = c >> 12 | 0xe0;
      buf[pos++] = c >> 6 & 0x3f | 0x80;
      buf[pos++] = c & 0x3f | 0x80;
    } else {
      const c2 = s.charCodeAt(i + 1);
      if (c < 0xdc00 && (c2 & 0xfc00) === 0xdc00) {
        c = 0x10000 + ((c & 0x3ff) << 10) + (c2 & 0x3ff);
        ++i;
        buf[pos++] = c >> 18 | 0xf0;
        buf[pos++] = c >> 12 & 0x3f | 0x80;
        buf[pos++] = c >> 6 & 0x3f | 0x80;
        buf[pos++] = c & 0x3f | 0x80;
      } else {
        // A lone surrogate: U+FFFD, as TextEncoder writes it.
        buf[pos++] = 0xef;
        buf[pos++] = 0xbf;
        buf[pos++] = 0xbd;
      }
    }
  }
  return pos - start;
}

/** Writes `s` (whose UTF-8 length is `len`, from {@link utf8Length}) into `buf` at `pos`, with the platform encoder. */
export function utf8WriteLong(s: string, buf: Uint8Array, pos: number, len: number): void {
  _ENCODER.encodeInto(s, buf.subarray(pos, pos + len));
}

/** The string of `buf[start, end)`; throws a `TypeError` when those bytes are not valid UTF-8. */
export function utf8ReadStrict(buf: Uint8Array, start: number, end: number): string {
  if (end - start < 1) return "";
  if (end - start >= _DECODER_MIN) return _DECODER.decode(buf.subarray(start, end));
  let s = "";
  let i = start;
  for (; i + 7 < end; i += 8) {
    const c1 = buf[i]!, c2 = buf[i + 1]!, c3 = buf[i + 2]!, c4 = buf[i + 3]!;
    const c5 = buf[i + 4]!, c6 = buf[i + 5]!, c7 = buf[i + 6]!, c8 = buf[i + 7]!;
    if ((c1 | c2 | c3 | c4 | c5 | c6 | c7 | c8) & 0x80) return s + _DECODER.decode(buf.subarray(i, end));
    s += String.fromCharCode(c1, c2, c3, c4, c5, c6, c7, c8);
  }
  for (; i < end; ++i) {
    const c = buf[i]!;
    if (c & 0x80) return s + _DECODER.decode(buf.subarray(i, end));
    s += String.fromCharCode(c);
  }
  return s;
}
