/**
 * Writing framed messages: the 5-byte header (the body's length, a little-endian u32, then the kind), then the
 * body. A message beyond its kind's limit is refused before anything is written.
 *
 * @module
 */
import { FramingError } from "./errors.ts";
import { HEADER_BYTES, kindSpec } from "./frame_kinds.ts";

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

/** Bodies up to this size are copied behind their header into one buffer; larger ones are written as they are. */
export const COPY_BELOW = 16 * 1024;

/**
 * One message as the buffers to write in order: a single buffer (header and body) for a small body, where one write
 * is cheaper than two, or the header and the caller's body itself for a large one, where a second write is cheaper
 * than allocating and copying the body. The body must stay unchanged until the writes are done.
 */
export function frameParts(kind: number, body: Uint8Array = new Uint8Array(0)): Uint8Array[] {
  if (body.length < COPY_BELOW) return [encodeFrame(kind, body)];
  checkOutgoing(kind, body.length);
  const header = new Uint8Array(HEADER_BYTES);
  writeHeader(header, 0, kind, body.length);
  return [header, body];
}
