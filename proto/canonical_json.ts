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
import { WireDecodeError } from "./wire.ts";

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
 * Reads a NodeSpec from its JSON object form (either enum names or numbers, base64 bytes).
 *
 * @throws {WireDecodeError} `invalid-json` when the object cannot describe a NodeSpec.
 */
export function nodeSpecFromJson(json: unknown): bcd.v1.NodeSpec {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new WireDecodeError("bcd.v1.NodeSpec", "invalid-json", 0, "a JSON object is expected");
  }
  try {
    return bcd.v1.NodeSpec.fromObject(json as Record<string, unknown>);
  } catch (e) {
    const detail = e instanceof Error ? e.message : String(e);
    throw new WireDecodeError("bcd.v1.NodeSpec", "invalid-json", 0, detail, { cause: e });
  }
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
