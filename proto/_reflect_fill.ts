/**
 * Test support: walks the reflection descriptor (`proto/gen/bcd.json`) to build, for every message type, values with
 * every field set to a non-default value, so a round-trip test cannot forget a field. Messages with oneofs get one
 * value per member position, so every oneof member is exercised.
 *
 * @module
 */

import protobuf from "protobufjs";
import "./runtime/_protobufjs_reference.ts";
import descriptor from "./gen/bcd.json" with { type: "json" };
import { bcd, google } from "./gen/bcd.js";
import type { MessageClass } from "./wire.ts";

/** The reflection root of the committed descriptor, fully resolved. */
export function reflectionRoot(): protobuf.Root {
  const root = protobuf.Root.fromJSON(descriptor as protobuf.INamespace);
  root.resolveAll();
  return root;
}

/** Every message type of the descriptor, `bcd.v1` and the well-known types it imports. */
export function allMessageTypes(root: protobuf.Root): protobuf.Type[] {
  const out: protobuf.Type[] = [];
  const walk = (ns: protobuf.NamespaceBase) => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof protobuf.Type) out.push(nested);
      if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) walk(nested);
    }
  };
  walk(root);
  return out.sort((a, b) => a.fullName.localeCompare(b.fullName));
}

/**
 * The generated static class of a reflection type (`.bcd.v1.Hello` -> `bcd.v1.Hello`), from `proto/gen/bcd.js` or
 * from another load of it (`from`: its `bcd` and `google` exports).
 */
export function staticClassOf(
  type: protobuf.Type,
  from: { bcd: unknown; google: unknown } = { bcd, google },
): MessageClass<unknown, never> | undefined {
  const path = type.fullName.replace(/^\./, "").split(".");
  let cur: unknown = from;
  for (const part of path) {
    if (cur === null || typeof cur !== "object" && typeof cur !== "function") return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return typeof cur === "function" ? cur as unknown as MessageClass<unknown, never> : undefined;
}

/** Picks the value of a scalar field: its type, its name, and `i`, which varies repeated elements. */
export type ScalarPick = (type: string, name: string, i: number) => unknown;

/** A plain value for one scalar type; `i` varies repeated elements. */
function scalar(type: string, name: string, i: number): unknown {
  switch (type) {
    case "string":
      return `${name}-${i}-ü`;
    case "bool":
      return true;
    case "bytes":
      return new Uint8Array([0xff, i, 0x00, 0x80]);
    case "double":
      return 1.5 + i;
    case "float":
      return 0.25 + i;
    case "int32":
    case "sint32":
    case "sfixed32":
      return -123456 - i;
    case "uint32":
    case "fixed32":
      return 0xfffffff0 + i;
    case "int64":
    case "sint64":
    case "sfixed64":
      return -(Number.MAX_SAFE_INTEGER - i);
    case "uint64":
    case "fixed64":
      return Number.MAX_SAFE_INTEGER - i;
  }
  throw new TypeError(`no fill value for scalar type ${type} (field ${name})`);
}

function fieldValue(field: protobuf.Field, i: number, depth: number, pick: ScalarPick): unknown {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Enum) {
    const values = Object.values(rt.values);
    return values[(values.length - 1 - i + values.length) % values.length] ?? 0;
  }
  if (rt instanceof protobuf.Type) return fillMessage(rt, i, depth + 1, pick);
  return pick(field.type, field.name, i);
}

/** How many values {@link fillVariants} makes for `type`: the size of its largest oneof, or 1. */
export function variantCount(type: protobuf.Type): number {
  return Math.max(1, ...type.oneofsArray.map((o) => o.fieldsArray.length));
}

/**
 * A value of `type` with every field set; oneof `k` gets its member `variant % size`. Scalars come from `pick`
 * (default: a non-default value of each type).
 */
export function fillMessage(
  type: protobuf.Type,
  variant = 0,
  depth = 0,
  pick: ScalarPick = scalar,
): Record<string, unknown> {
  if (depth > 16) throw new RangeError(`${type.fullName}: recursive schema, fill depth exceeded`);
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const oneof = field.partOf;
    if (oneof) {
      const chosen = oneof.fieldsArray[variant % oneof.fieldsArray.length];
      if (chosen !== field) continue;
      out[oneof.name] = field.name;
    }
    if (field instanceof protobuf.MapField) {
      const mapField = field;
      const key = mapField.keyType === "string" ? `key-${field.name}` : String(pick(mapField.keyType, field.name, 0));
      out[field.name] = { [key]: fieldValue(field, 0, depth, pick), [`${key}-2`]: fieldValue(field, 1, depth, pick) };
    } else if (field.repeated) {
      out[field.name] = [fieldValue(field, 0, depth, pick), fieldValue(field, 1, depth, pick)];
    } else {
      out[field.name] = fieldValue(field, 0, depth, pick);
    }
  }
  return out;
}

/** Every variant of {@link fillMessage} for `type`. */
export function fillVariants(type: protobuf.Type): Record<string, unknown>[] {
  return Array.from({ length: variantCount(type) }, (_, v) => fillMessage(type, v));
}

/**
 * A message as plain data, read through its reflection type: every field and every oneof discriminator (a getter on
 * generated classes) that is set, recursively; bytes become plain Uint8Array copies.
 */
export function plain(type: protobuf.Type, value: unknown): Record<string, unknown> {
  const src = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const conv = (field: protobuf.Field, v: unknown): unknown => {
    if (v instanceof Uint8Array) return new Uint8Array(v);
    if (field.resolvedType instanceof protobuf.Type && v !== null && typeof v === "object") {
      return plain(field.resolvedType, v);
    }
    return v;
  };
  for (const field of type.fieldsArray) {
    const v = src[field.name];
    if (v === undefined || v === null || !Object.hasOwn(src, field.name)) continue;
    if (field instanceof protobuf.MapField) {
      out[field.name] = Object.fromEntries(Object.entries(v as object).map(([k, e]) => [k, conv(field, e)]));
    } else if (field.repeated) {
      out[field.name] = (v as unknown[]).map((e) => conv(field, e));
    } else {
      out[field.name] = conv(field, v);
    }
  }
  for (const oneof of type.oneofsArray) {
    if (src[oneof.name] !== undefined) out[oneof.name] = src[oneof.name];
  }
  return out;
}

/**
 * A seeded mutator for the fuzz tests: each call returns `valid` with 1–4 bytes flipped, inserted or removed by an
 * xorshift PRNG started at `seed`, so a failure reproduces from the same seed.
 */
export function byteMutator(seed: number): (valid: Uint8Array) => Uint8Array {
  let s = seed;
  const rand = (n: number) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % n;
  };
  return (valid) => {
    const bytes = Array.from(valid);
    for (let m = 1 + rand(4); m > 0 && bytes.length > 0; m--) {
      const at = rand(bytes.length);
      const op = rand(3);
      if (op === 0) bytes[at] = rand(256);
      else if (op === 1) bytes.splice(at, 0, rand(256));
      else bytes.splice(at, 1);
    }
    return new Uint8Array(bytes);
  };
}
