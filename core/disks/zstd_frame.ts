/**
 * The length of the first Zstandard frame in a buffer (RFC 8878 §3.1.1), found by walking its header and block
 * headers without decompressing. A zstd-compressed qcow2 cluster is one frame followed by whatever shares its last
 * sector (the next cluster's bytes, or padding); the decompressor is handed exactly the frame.
 *
 * @module
 */

const _MAGIC = 0xfd2fb528;

/** The first frame's length in bytes, or `undefined` when `b` does not hold a whole, well-formed frame. */
export function zstdFrameLength(b: Uint8Array): number | undefined {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length < 6 || dv.getUint32(0, true) !== _MAGIC) return undefined;
  const fhd = b[4]!;
  if ((fhd & 0x08) !== 0) return undefined; // the reserved bit
  const single = (fhd & 0x20) !== 0;
  const fcsFlag = fhd >> 6;
  const did = [0, 1, 2, 4][fhd & 3]!;
  const fcs = fcsFlag === 0 ? (single ? 1 : 0) : [0, 2, 4, 8][fcsFlag]!;
  let at = 5 + (single ? 0 : 1) + did + fcs;
  for (;;) {
    if (at + 3 > b.length) return undefined;
    const h = b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16);
    const type = (h >> 1) & 3;
    const size = h >>> 3;
    if (type === 3) return undefined; // reserved
    at += 3 + (type === 1 ? 1 : size);
    if (at > b.length) return undefined;
    if ((h & 1) !== 0) break;
  }
  if ((fhd & 0x04) !== 0) at += 4; // the content checksum
  return at <= b.length ? at : undefined;
}
