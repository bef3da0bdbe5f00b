/**
 * A strict check of a message's JSON object form against the committed descriptor (`proto/gen/bcd.json`), run before
 * protobufjs' lenient `fromObject` (which drops unknown keys and coerces a wrong type to a default). Every refusal
 * names the path of the offending value, e.g. `devices.assignments[0].binding: unknown enum value "BINDING_FOO"`.
 *
 * Accepted: the `.proto` field names (snake_case); integers as JSON numbers, 64-bit ones also as decimal strings (the
 * proto3 JSON spelling), within the field's range and never beyond `Number.MAX_SAFE_INTEGER`; enums by name or number;
 * bytes as base64 (standard or URL-safe); `null` for an absent field; at most one member of each oneof.
 *
 * @module
 */

import { lookup, type NodeDesc, resolve, SCALAR_TYPES } from "./descriptor.ts";

/** A JSON object that does not describe the message; `path` locates the offending value. */
export class JsonShapeError extends TypeError {
  constructor(readonly path: string, detail: string) {
    super(`${path || "(root)"}: ${detail}`);
    this.name = "JsonShapeError";
  }
}

const INT_RANGES: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  sint32: [-(2 ** 31), 2 ** 31 - 1],
  sfixed32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  fixed32: [0, 2 ** 32 - 1],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  sint64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  sfixed64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
  fixed64: [0, Number.MAX_SAFE_INTEGER],
};

const BASE64 = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkScalar(type: string, value: unknown, path: string): void {
  const range = INT_RANGES[type];
  if (range) {
    const n = typeof value === "string" && type.endsWith("64") && /^-?\d{1,16}$/.test(value) ? Number(value) : value;
    if (typeof n !== "number" || !Number.isInteger(n) || n < range[0] || n > range[1]) {
      throw new JsonShapeError(path, `${type} expected, got ${JSON.stringify(value)}`);
    }
    return;
  }
  switch (type) {
    case "string":
      if (typeof value !== "string") throw new JsonShapeError(path, `string expected, got ${typeof value}`);
      return;
    case "bool":
      if (typeof value !== "boolean") throw new JsonShapeError(path, `boolean expected, got ${typeof value}`);
      return;
    case "double":
    case "float":
      if (typeof value !== "number" || !Number.isFinite(value)) {
        throw new JsonShapeError(path, "finite number expected");
      }
      return;
    case "bytes":
      if (typeof value !== "string" || !BASE64.test(value)) throw new JsonShapeError(path, "base64 string expected");
      return;
  }
  throw new Error(`descriptor: unknown scalar type ${type}`);
}

function checkValue(scope: readonly string[], type: string, value: unknown, path: string): void {
  if (SCALAR_TYPES.has(type)) {
    return checkScalar(type, value, path);
  }
  const { path: typePath, node } = resolve(scope, type);
  if (node.values) {
    const known = typeof value === "string"
      ? Object.hasOwn(node.values, value)
      : typeof value === "number" && Object.values(node.values).includes(value);
    if (!known) throw new JsonShapeError(path, `unknown ${typePath.join(".")} value ${JSON.stringify(value)}`);
    return;
  }
  checkMessageAt(typePath, node, value, path);
}

function checkMessageAt(typePath: readonly string[], node: NodeDesc, value: unknown, path: string): void {
  if (!isObject(value)) throw new JsonShapeError(path, `object expected for ${typePath.join(".")}`);
  const fields = node.fields ?? {};
  for (const [key, v] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (!Object.hasOwn(fields, key)) throw new JsonShapeError(at, `no such field in ${typePath.join(".")}`);
    if (v === null) continue;
    const field = fields[key]!;
    if (field.keyType) {
      if (!isObject(v)) throw new JsonShapeError(at, "object expected for a map");
      for (const [k, e] of Object.entries(v)) {
        if (field.keyType !== "string") checkScalar(field.keyType, /^-?\d+$/.test(k) ? Number(k) : k, `${at}[${k}]`);
        checkValue(typePath, field.type, e, `${at}[${JSON.stringify(k)}]`);
      }
    } else if (field.rule === "repeated") {
      if (!Array.isArray(v)) throw new JsonShapeError(at, "array expected");
      v.forEach((e, i) => checkValue(typePath, field.type, e, `${at}[${i}]`));
    } else {
      checkValue(typePath, field.type, v, at);
    }
  }
  for (const [name, { oneof }] of Object.entries(node.oneofs ?? {})) {
    const set = oneof.filter((m) => value[m] !== undefined && value[m] !== null);
    if (set.length > 1) throw new JsonShapeError(path, `oneof ${name} has ${set.join(" and ")} set; at most one`);
  }
}

/**
 * Checks `value` against message `fullName` (e.g. `bcd.v1.NodeSpec`).
 *
 * @throws {JsonShapeError} naming the path of the first value that does not fit.
 */
export function checkMessageJson(fullName: string, value: unknown): void {
  const path = fullName.split(".");
  const node = lookup(path);
  if (!node?.fields) throw new Error(`descriptor: no message ${fullName}`);
  checkMessageAt(path, node, value, "");
}
