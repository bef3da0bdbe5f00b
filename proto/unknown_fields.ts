/**
 * The top-level fields of an encoded message that its schema does not declare. protobufjs drops unknown fields when
 * it decodes, so a reader that must not ignore them (a NodeSpec section this build does not know) scans the bytes for
 * them first. The scan allocates only its result, skips nested groups iteratively, and refuses malformed input with
 * {@link MessageBudgetError} (the same reasons as the decoder's pre-scan).
 *
 * @module
 */

import { lookup } from "./descriptor.ts";
import { MessageBudgetError, type Scan, skipValue, varint32 } from "./message_budget.ts";

/** One field of a message as it sits on the wire. */
export interface WireField {
  readonly field: number;
  readonly wireType: number;
  /** The whole record: tag and value, ready to be written out again. */
  readonly record: Uint8Array;
  /** The value alone (for wire type 2, without its length prefix). */
  readonly value: Uint8Array;
}

/** Every top-level field of `bytes`, in wire order (a repeated or re-sent field appears once per occurrence). */
export function wireFields(bytes: Uint8Array): WireField[] {
  const s: Scan = { buf: bytes, pos: 0, left: 0 };
  const out: WireField[] = [];
  const end = bytes.length;
  while (s.pos < end) {
    const start = s.pos;
    const tag = varint32(s, end);
    const field = tag >>> 3, wireType = tag & 7;
    if (field === 0) throw new MessageBudgetError("malformed", `field number 0 at offset ${start}`);
    if (wireType === 4) throw new MessageBudgetError("malformed", `end group without a start at offset ${start}`);
    let valueStart = s.pos;
    if (wireType === 2) {
      const len = varint32(s, end);
      valueStart = s.pos;
      if (end - s.pos < len) throw new MessageBudgetError("truncated", `field ${field} runs past offset ${end}`);
      s.pos += len;
    } else skipValue(s, end, wireType, field);
    out.push({ field, wireType, record: bytes.subarray(start, s.pos), value: bytes.subarray(valueStart, s.pos) });
  }
  return out;
}

/** The top-level fields of `bytes` that the message at `path` (`["bcd", "v1", "NodeSpec"]`) does not declare. */
export function unknownFields(path: readonly string[], bytes: Uint8Array): WireField[] {
  const node = lookup(path);
  if (!node?.fields) throw new TypeError(`descriptor: ${path.join(".")} is not a message`);
  const known = new Set(Object.values(node.fields).map((f) => f.id));
  return wireFields(bytes).filter((f) => !known.has(f.field));
}

/** Whether a wire value is its type's default (a zero varint, an empty length-delimited value): an empty field. */
export function isDefaultWireValue(f: WireField): boolean {
  if (f.wireType === 2) return f.value.length === 0;
  if (f.wireType === 0) return f.value.every((b) => b === 0 || b === 0x80);
  if (f.wireType === 1 || f.wireType === 5) return f.value.every((b) => b === 0);
  return false;
}
