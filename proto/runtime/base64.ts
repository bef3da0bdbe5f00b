/**
 * Base64 for bytes fields in the generated `fromObject` / `toObject` (`$util.base64`), as protobufjs reads and writes
 * it: the standard alphabet out, with `=` padding; the standard and the URL-safe alphabet in (`-` and `_` read as `+`
 * and `/`), padding optional, anything else refused with `Error("invalid encoding")`.
 *
 * @module
 */

const _B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const _S64 = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) _S64[_B64.charCodeAt(i)] = i;
_S64[45] = 62; // - as +
_S64[95] = 63; // _ as /

/** An upper bound of the bytes `s` decodes to (exact for well-formed input): what to allocate for {@link base64Decode}. */
export function base64Length(s: string): number {
  let p = s.length;
  if (!p) return 0;
  while (p > 0 && s.charAt(p - 1) === "=") --p;
  return Math.floor(p * 3 / 4);
}

/** `buf[start, end)` in base64. */
export function base64Encode(buf: Uint8Array, start: number, end: number): string {
  const out: string[] = [];
  let chunk = "";
  for (; start + 2 < end; start += 3) {
    const b0 = buf[start]!, b1 = buf[start + 1]!, b2 = buf[start + 2]!;
    chunk += _B64[b0 >> 2]! + _B64[(b0 & 3) << 4 | b1 >> 4]! + _B64[(b1 & 15) << 2 | b2 >> 6]! + _B64[b2 & 63]!;
    if (chunk.length > 8191) {
      out.push(chunk);
      chunk = "";
    }
  }
  if (end - start === 1) {
    const b0 = buf[start]!;
    chunk += _B64[b0 >> 2]! + _B64[(b0 & 3) << 4]! + "==";
  } else if (end - start === 2) {
    const b0 = buf[start]!, b1 = buf[start + 1]!;
    chunk += _B64[b0 >> 2]! + _B64[(b0 & 3) << 4 | b1 >> 4]! + _B64[(b1 & 15) << 2]! + "=";
  }
  out.push(chunk);
  return out.join("");
}

/** Decodes `s` into `buf` at `offset` (room for {@link base64Length} bytes is the caller's); returns bytes written. */
export function base64Decode(s: string, buf: Uint8Array, offset: number): number {
  const start = offset;
  let j = 0, t = 0;
  for (let i = 0; i < s.length;) {
    const code = s.charCodeAt(i++);
    if (code === 61 && j > 1) break;
    const c = code < 128 ? _S64[code]! : -1;
    if (c < 0) throw new Error("invalid encoding");
    switch (j) {
      case 0:
        t = c;
        j = 1;
        break;
      case 1:
        buf[offset++] = t << 2 | (c & 48) >> 4;
        t = c;
        j = 2;
        break;
      case 2:
        buf[offset++] = (t & 15) << 4 | (c & 60) >> 2;
        t = c;
        j = 3;
        break;
      case 3:
        buf[offset++] = (t & 3) << 6 | c;
        j = 0;
        break;
    }
  }
  if (j === 1) throw new Error("invalid encoding");
  return offset - start;
}
