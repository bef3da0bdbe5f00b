/**
 * What the compiled codecs of the message classes call besides the runtime's reader and writer (`classes.ts` writes
 * their source; it binds these as `P`, `L`, `M` and `B`, and `gen/bcd_start_codecs.js` imports them under the same
 * names): a map entry read, a 64-bit value's object form, a map's copy, absent bytes' object form.
 *
 * @module
 */

import runtime, { type Reader } from "./runtime/mod.ts";
import type { IConversionOptions } from "./runtime/mod.ts";

const util = runtime.util;

type Obj = Record<string, unknown>;

/** One `map<string, string>` entry into `message[name]`: a key (1) and a value (2), each "" when absent. */
export function readMapEntry(reader: Reader, message: Obj, name: string, depth: number): void {
  if (message[name] === util.emptyObject) message[name] = {};
  const map = message[name] as Record<string, string>;
  const end = reader.size() + reader.pos;
  if (end > reader.len) throw RangeError("index out of range");
  const outer = reader.len;
  reader.len = end;
  let key = "", value = "";
  while (reader.pos < end) {
    let tag = reader.tag();
    const wireType = tag & 7;
    tag >>>= 3;
    if (tag === 1 && wireType === 2) key = reader.stringVerify();
    else if (tag === 2 && wireType === 2) value = reader.stringVerify();
    else reader.skipType(wireType, depth, tag);
  }
  if (reader.pos !== end) throw RangeError("index out of range");
  reader.len = outer;
  if (key === "__proto__") util.makeProp(map, key);
  map[key] = value;
}

/** A 64-bit value as `toObject`'s `longs` option asks (numbers; `{low, high}` halves as the static module read them). */
export function longTo(v: unknown, options: IConversionOptions, unsigned: boolean): unknown {
  if (typeof BigInt !== "undefined" && options.longs === BigInt) {
    if (typeof v === "number") return BigInt(v);
    throw new TypeError("a 64-bit value that is not a number cannot be read as a bigint");
  }
  if (typeof v === "number") return options.longs === String ? String(v) : v;
  if (options.longs === String) throw new TypeError("a 64-bit value that is not a number cannot be read as a string");
  const halves = v as { low: number; high: number };
  return options.longs === Number ? new util.LongBits(halves.low >>> 0, halves.high >>> 0).toNumber(unsigned) : v;
}

/** A copy of a `map<string, string>` (an own `__proto__` key stays a key). */
export function copyMap(map: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(map)) {
    if (k === "__proto__") util.makeProp(out, k);
    out[k] = map[k];
  }
  return out;
}

/** Absent bytes' object form under `defaults`. */
export function bytesDefault(options: IConversionOptions): unknown {
  if (options.bytes === String) return "";
  const bytes: number[] = [];
  return options.bytes !== Array ? util.newBuffer(bytes) : bytes;
}
