/**
 * A pre-scan that bounds what a body can make the decoder allocate. The size bound alone is not enough: in 4 MiB a
 * peer can pack two million empty sub-messages (two bytes each), and the decoder would build two million objects, a
 * hundredfold amplification. This scan walks the wire format against the descriptor without allocating, counts the
 * sub-messages and map entries the decoder would create, and refuses a body over the budget before decoding it.
 *
 * It also refuses what no decoder should read: a truncated field, a bad wire type, field number 0, and unknown groups
 * nested past {@link MAX_GROUP_DEPTH}.
 *
 * @module
 */

import { type FieldDesc, lookup, type NodeDesc, resolve, type Resolved, SCALAR_TYPES } from "./descriptor.ts";

/** The default budget: sub-messages and map entries one body may carry (a 1,000-instance spec needs about 20,000). */
export const DEFAULT_MAX_MESSAGES = 262_144;

/** Unknown groups nest at most this deep (protobufjs' own recursion limit). */
export const MAX_GROUP_DEPTH = 100;

/** Why a scan refused a body. */
export type BudgetReason = "too-many-messages" | "truncated" | "malformed" | "too-deep";

/** A body the scan refused. */
export class MessageBudgetError extends RangeError {
  constructor(readonly reason: BudgetReason, detail: string) {
    super(detail);
    this.name = "MessageBudgetError";
  }
}

const byId = new WeakMap<NodeDesc, Map<number, FieldDesc>>();

function fieldsById(node: NodeDesc): Map<number, FieldDesc> {
  let m = byId.get(node);
  if (!m) {
    m = new Map(Object.values(node.fields ?? {}).map((f) => [f.id, f]));
    byId.set(node, m);
  }
  return m;
}

/** A cursor over wire bytes (`left`: the sub-message budget still unspent). */
export interface Scan {
  readonly buf: Uint8Array;
  pos: number;
  left: number;
}

/** Reads a varint of at most 32 significant bits (tags, lengths); longer ones are malformed. */
export function varint32(s: Scan, end: number): number {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    if (s.pos >= end) throw new MessageBudgetError("truncated", `varint runs past offset ${end}`);
    const b = s.buf[s.pos++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) {
      if (value > 0xffffffff) throw new MessageBudgetError("malformed", `varint over 32 bits at offset ${s.pos}`);
      return value;
    }
  }
  throw new MessageBudgetError("malformed", `varint over 32 bits at offset ${s.pos}`);
}

function skipVarint(s: Scan, end: number): void {
  for (let i = 0; i < 10; i++) {
    if (s.pos >= end) throw new MessageBudgetError("truncated", `varint runs past offset ${end}`);
    if (s.buf[s.pos++]! < 0x80) return;
  }
  throw new MessageBudgetError("malformed", `varint longer than 10 bytes at offset ${s.pos}`);
}

function skip(s: Scan, end: number, n: number): void {
  if (end - s.pos < n) throw new MessageBudgetError("truncated", `field of ${n} bytes runs past offset ${end}`);
  s.pos += n;
}

/** Skips one field's value of wire type `wt` (after its tag); groups are skipped iteratively. */
export function skipValue(s: Scan, end: number, wt: number, field: number): void {
  switch (wt) {
    case 0:
      return skipVarint(s, end);
    case 1:
      return skip(s, end, 8);
    case 2:
      return skip(s, end, varint32(s, end));
    case 5:
      return skip(s, end, 4);
    case 3: {
      const open: number[] = [field];
      while (open.length > 0) {
        if (open.length > MAX_GROUP_DEPTH) {
          throw new MessageBudgetError("too-deep", `groups nest past ${MAX_GROUP_DEPTH} at offset ${s.pos}`);
        }
        const tag = varint32(s, end);
        const f = tag >>> 3, w = tag & 7;
        if (w === 4) {
          if (f !== open.pop()) throw new MessageBudgetError("malformed", `mismatched end group at offset ${s.pos}`);
        } else if (w === 3) {
          open.push(f);
        } else {
          skipValue(s, end, w, f);
        }
      }
      return;
    }
  }
  throw new MessageBudgetError("malformed", `invalid wire type ${wt} at offset ${s.pos}`);
}

function spend(s: Scan): void {
  if (--s.left < 0) throw new MessageBudgetError("too-many-messages", `more sub-messages than the budget allows`);
}

const subMessage = new WeakMap<FieldDesc, Resolved | null>();

/** The message type of a field (the value type for a map), or null for scalars and enums. Cached per field. */
function isMessage(scope: readonly string[], field: FieldDesc): Resolved | null {
  let r = subMessage.get(field);
  if (r === undefined) {
    r = null;
    if (!SCALAR_TYPES.has(field.type)) {
      const found = resolve(scope, field.type);
      if (found.node.fields) r = found;
    }
    subMessage.set(field, r);
  }
  return r;
}

function walk(s: Scan, end: number, path: readonly string[], node: NodeDesc): void {
  const fields = fieldsById(node);
  while (s.pos < end) {
    const tag = varint32(s, end);
    const no = tag >>> 3, wt = tag & 7;
    if (no === 0) throw new MessageBudgetError("malformed", `field number 0 at offset ${s.pos}`);
    const field = fields.get(no);
    const sub = field && wt === 2 ? isMessage(path, field) : null;
    if (field && wt === 2 && (sub || field.keyType)) {
      const len = varint32(s, end);
      if (end - s.pos < len) throw new MessageBudgetError("truncated", `field ${no} runs past offset ${end}`);
      const stop = s.pos + len;
      spend(s);
      if (field.keyType) {
        if (sub) walkMapEntry(s, stop, sub.path, sub.node);
        s.pos = stop;
      } else {
        walk(s, stop, sub!.path, sub!.node);
      }
    } else {
      skipValue(s, end, wt, no);
    }
  }
  if (s.pos !== end) throw new MessageBudgetError("truncated", `message runs past offset ${end}`);
}

/** A map entry whose value is a message: field 2 is that message. */
function walkMapEntry(s: Scan, end: number, path: readonly string[], node: NodeDesc): void {
  while (s.pos < end) {
    const tag = varint32(s, end);
    const no = tag >>> 3, wt = tag & 7;
    if (no === 2 && wt === 2) {
      const len = varint32(s, end);
      if (end - s.pos < len) throw new MessageBudgetError("truncated", `map value runs past offset ${end}`);
      const stop = s.pos + len;
      spend(s);
      walk(s, stop, path, node);
    } else {
      skipValue(s, end, wt, no);
    }
  }
}

/**
 * Scans `bytes` as message `fullName` (e.g. `bcd.v1.NodeFrame`) and refuses it when decoding it would create more than
 * `maxMessages` sub-messages and map entries, or when it is not well-formed wire data. Allocates nothing per field.
 *
 * @throws {MessageBudgetError} with the reason.
 */
export function checkMessageBudget(fullName: string, bytes: Uint8Array, maxMessages = DEFAULT_MAX_MESSAGES): void {
  let top = topLevel.get(fullName);
  if (top === undefined) {
    const path = fullName.split(".");
    const node = lookup(path);
    if (!node?.fields) throw new Error(`descriptor: no message ${fullName}`);
    top = { path, node };
    topLevel.set(fullName, top);
  }
  walk({ buf: bytes, pos: 0, left: maxMessages }, bytes.length, top.path, top.node);
}

/** The messages scanned so far by name: every frame and command body of a session is one of a few. */
const topLevel = new Map<string, Resolved>();
