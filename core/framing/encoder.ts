/**
 * Writing framed messages: the 5-byte header (the body's length, a little-endian u32, then the kind), then the
 * body. A message beyond its kind's limit is refused before anything is written.
 *
 * @module
 */
import { FramingError } from "./errors.ts";
import { HEADER_BYTES, kindSpec } from "./kinds.ts";

/** Checks that `kind` is assigned and that `bodyLength` fits its limit; throws a {@link FramingError} otherwise. */
export function checkOutgoing(kind: number, bodyLength: number): void {
  const spec = kindSpec(kind);
  if (spec === undefined) throw new FramingError("unknown-kind", `kind ${kind} is not assigned`, kind);
  if (bodyLength > spec.limit) {
    throw new FramingError("oversized", `${spec.name} holds at most ${spec.limit} bytes, not ${bodyLength}`, kind);
  }
}

/** Writes the header of a message of `kind` with a body of `bodyLength` bytes at `out[offset]`. */
export function writeHeader(out: Uint8Array, offset: number, kind: number, bodyLength: number): void {
  out[offset] = bodyLength & 0xff;
  out[offset + 1] = (bodyLength >>> 8) & 0xff;
  out[offset + 2] = (bodyLength >>> 16) & 0xff;
  out[offset + 3] = (bodyLength >>> 24) & 0xff;
  out[offset + 4] = kind;
}

/** One message, header and body, in a new buffer; refuses a kind that is not assigned or a body beyond its limit. */
export function encodeFrame(kind: number, body: Uint8Array = new Uint8Array(0)): Uint8Array {
  checkOutgoing(kind, body.length);
  const out = new Uint8Array(HEADER_BYTES + body.length);
  writeHeader(out, 0, kind, body.length);
  out.set(body, HEADER_BYTES);
  return out;
}
