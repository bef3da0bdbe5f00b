/**
 * Hex digests as bytes.
 *
 * @module
 */

/** The bytes of an even-length lowercase hex string; `RangeError` otherwise. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-f]*$/.test(hex)) throw new RangeError(`not lowercase hex: ${hex.slice(0, 80)}`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}
