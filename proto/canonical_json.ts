/**
 * Canonical JSON of a NodeSpec, as the control plane compares specs: it raises `nodes.generation` only when the
 * canonical JSON (sorted keys) differs from the stored spec (000 §NodeSpec and its sections).
 *
 * The form (a design where the seed says only "protobuf JSON" and "sorted keys"): field names as the `.proto` spells
 * them (snake_case, the seed's spelling), enums by name, bytes as base64, 64-bit integers as JSON numbers (the wire
 * layer guarantees they are safe integers), default scalars and empty lists omitted, a set-but-empty section kept as
 * `{}` (in a patch it clears the section), object keys sorted by UTF-16 code unit at every level, no whitespace.
 *
 * @module
 */

import { bcd } from "./gen/bcd.js";
// NodeSpec.fromObject: the generated classes get it only from this module (from_object_split.ts).
import "./gen/bcd_from_object.js";
import { checkMessageJson, JsonShapeError } from "./json_check.ts";
import { type Decoded, type DecodeOptions, DEFAULT_MAX_FRAME_BYTES, WireDecodeError } from "./wire.ts";

/** A NodeSpec as decoding (or reading JSON) builds it. */
export type NodeSpec = Decoded<typeof bcd.v1.NodeSpec>;

/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const TO_OBJECT = {
  enums: String,
  bytes: String,
  longs: Number,
  defaults: false,
  arrays: false,
  objects: false,
  oneofs: false,
} as const;

/** The NodeSpec as a plain JSON object in the canonical form (keys not yet sorted; see {@link canonicalJson}). */
export function nodeSpecToJson(spec: bcd.v1.NodeSpec.$Properties): { [key: string]: Json } {
  const message = spec instanceof bcd.v1.NodeSpec ? spec : bcd.v1.NodeSpec.fromObject(spec);
  return bcd.v1.NodeSpec.toObject(message, TO_OBJECT) as { [key: string]: Json };
}

/**
 * Reads a NodeSpec from its JSON object form, strictly: an unknown field, a value of the wrong type or range, an unknown
 * enum name or two members of a oneof are refused (see `json_check.ts`), never dropped or coerced.
 *
 * @throws {WireDecodeError} `invalid-json`, naming the path of the offending value.
 */
export function nodeSpecFromJson(json: unknown): NodeSpec {
  try {
    checkMessageJson("bcd.v1.NodeSpec", json);
  } catch (e) {
    if (!(e instanceof JsonShapeError)) throw e;
    throw new WireDecodeError("bcd.v1.NodeSpec", "invalid-json", 0, e.message, { cause: e });
  }
  // fromObject builds the same class instances, defaults on their prototypes, as decoding does.
  return bcd.v1.NodeSpec.fromObject(json as Record<string, unknown>) as unknown as NodeSpec;
}

/**
 * Parses NodeSpec JSON text within a size bound (default 4 MiB, counted in UTF-16 code units), then reads it strictly
 * with {@link nodeSpecFromJson}.
 *
 * @throws {WireDecodeError} `too-large` before parsing, or `invalid-json`.
 */
export function parseNodeSpecJson(text: string, options: DecodeOptions = {}): NodeSpec {
  const max = options.maxBytes ?? DEFAULT_MAX_FRAME_BYTES;
  if (text.length > max) {
    throw new WireDecodeError("bcd.v1.NodeSpec", "too-large", text.length, `the bound is ${max}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new WireDecodeError("bcd.v1.NodeSpec", "invalid-json", text.length, String(e), { cause: e });
  }
  return nodeSpecFromJson(json);
}

function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const out: { [key: string]: Json } = {};
  for (const key of Object.keys(value).sort()) {
    const v = value[key];
    if (v !== undefined) out[key] = sortKeys(v);
  }
  return out;
}

/** `JSON.stringify` with object keys sorted at every level and no whitespace. */
export function canonicalJson(value: Json): string {
  return JSON.stringify(sortKeys(value));
}

/**
 * The canonical JSON text of a NodeSpec: equal for two specs exactly when they describe the same desired state field
 * for field (list order counts).
 *
 * @example
 * ```ts
 * const changed = canonicalNodeSpecJson(next) !== canonicalNodeSpecJson(stored);
 * ```
 */
export function canonicalNodeSpecJson(spec: bcd.v1.NodeSpec.$Properties): string {
  return canonicalJson(nodeSpecToJson(spec));
}
