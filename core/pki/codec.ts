/**
 * The small codecs pki's formats share: base64 fields and JSON bounded before it is decoded.
 *
 * @module
 */

/** A pki structure that does not decode; `reason` names what was wrong. */
export class PkiFormatError extends Error {
  override name = "PkiFormatError";
}

/** Standard base64 of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Decodes standard base64, refusing anything else and anything decoding past `maxBytes`. */
export function fromBase64(field: string, value: unknown, maxBytes: number): Uint8Array {
  if (typeof value !== "string") throw new PkiFormatError(`${field}: expected a base64 string`);
  if (value.length > Math.ceil(maxBytes / 3) * 4) throw new PkiFormatError(`${field}: longer than ${maxBytes} bytes`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) {
    throw new PkiFormatError(`${field}: not standard base64`);
  }
  // The checks above leave only what atob took too (no whitespace, canonical length), and the default
  // `lastChunkHandling` keeps atob's verdict on padding bits; it skips the string of bytes atob builds.
  return Uint8Array.fromBase64(value);
}

const _UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes `bytes` as one JSON object after checking its size against `maxBytes`. */
export function decodeBoundedJson(what: string, bytes: Uint8Array, maxBytes: number): Record<string, unknown> {
  if (bytes.length > maxBytes) throw new PkiFormatError(`${what}: ${bytes.length} bytes, more than ${maxBytes}`);
  let v: unknown;
  try {
    v = JSON.parse(_UTF8.decode(bytes));
  } catch (e) {
    throw new PkiFormatError(`${what}: not UTF-8 JSON`, { cause: e });
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new PkiFormatError(`${what}: not a JSON object`);
  return v as Record<string, unknown>;
}

/** Reads a safe non-negative integer field. */
export function intField(what: string, obj: Record<string, unknown>, key: string): number {
  const v = obj[key];
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new PkiFormatError(`${what}.${key}: expected a non-negative integer`);
  }
  return v;
}

/** Reads a string field of at most `max` characters. */
export function stringField(what: string, obj: Record<string, unknown>, key: string, max = 256): string {
  const v = obj[key];
  if (typeof v !== "string" || v.length > max) throw new PkiFormatError(`${what}.${key}: expected a string`);
  return v;
}

/** Encodes a JSON value as UTF-8 bytes. */
export function encodeJson(v: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(v));
}
