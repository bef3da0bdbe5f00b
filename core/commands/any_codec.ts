/**
 * `google.protobuf.Any` in its wire form (field 1 `type_url`, field 2 `value`), hand-coded and bounded: the journal
 * stores a result as these bytes, opaque to it, so a replay carries the kind's result message unchanged.
 *
 * @module
 */
import type { AnyMessage } from "./command.ts";

/** The largest Any decoded (a result message). */
export const MAX_ANY_BYTES = 4 * 1024 * 1024;

/** A result body that is not an encoded Any. */
export class AnyDecodeError extends Error {
  override name = "AnyDecodeError";
}

function _varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** Encodes an Any. */
export function encodeAny(msg: AnyMessage): Uint8Array {
  const url = new TextEncoder().encode(msg.typeUrl);
  const parts = [0x0a, ..._varint(url.length)];
  const head2 = [0x12, ..._varint(msg.value.length)];
  const out = new Uint8Array(parts.length + url.length + head2.length + msg.value.length);
  out.set(parts, 0);
  out.set(url, parts.length);
  out.set(head2, parts.length + url.length);
  out.set(msg.value, parts.length + url.length + head2.length);
  return out;
}

/** Decodes an Any, refusing anything past {@link MAX_ANY_BYTES}, unknown wire types and truncated fields. */
export function decodeAny(bytes: Uint8Array): AnyMessage {
  if (bytes.length > MAX_ANY_BYTES) throw new AnyDecodeError(`${bytes.length} bytes, more than ${MAX_ANY_BYTES}`);
  let typeUrl = "";
  let value = new Uint8Array();
  let i = 0;
  const varint = (): number => {
    let n = 0;
    let mul = 1;
    for (let k = 0; k < 8; k++) {
      if (i >= bytes.length) throw new AnyDecodeError("truncated varint");
      const b = bytes[i++]!;
      n += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return n;
      mul *= 128;
    }
    throw new AnyDecodeError("varint too long");
  };
  while (i < bytes.length) {
    const tag = varint();
    if ((tag & 7) !== 2) throw new AnyDecodeError(`unexpected wire type ${tag & 7}`);
    const len = varint();
    if (len > bytes.length - i) throw new AnyDecodeError("truncated field");
    const field = bytes.subarray(i, i + len);
    i += len;
    if (tag >>> 3 === 1) typeUrl = new TextDecoder("utf-8", { fatal: true }).decode(field);
    else if (tag >>> 3 === 2) value = field.slice();
  }
  return { typeUrl, value };
}
