/**
 * The NDJSON codec of the turn protocol: one JSON object per line, internally tagged by `type`. Decoding refuses,
 * by name, unknown types, messages travelling the wrong way, missing, unknown and ill-typed fields, and keys that
 * could pollute prototypes. Integers are read from their source text, so 64-bit nanosecond timestamps survive
 * exactly; encoding writes fields in the seed's order and always writes `in_flight`, `null` included.
 *
 * @module
 */
import { TurnsProtocolError } from "./errors.ts";
import {
  type Direction,
  type FieldKind,
  type GuestMessage,
  type HostMessage,
  isMessageType,
  MAX_ENV_ENTRIES,
  MAX_ENV_NAME,
  MAX_SHORT_STRING,
  MESSAGE_SCHEMAS,
  type TurnsMessage,
} from "./messages.ts";

/** Keys refused at any depth: an object carrying them could reach a prototype once merged by careless code. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const INT_RE = /^(0|[1-9][0-9]*)$/;
const HEX256_RE = /^[0-9a-f]{64}$/;
const U64_MAX = (1n << 64n) - 1n;

/** A JSON number kept as its source text until a field says how to read it. */
class _RawNumber {
  constructor(readonly source: string) {}
}

type _Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;

function _parse(line: string): unknown {
  const reviver: _Reviver = function (key, value, context) {
    if (FORBIDDEN_KEYS.has(key)) throw new TurnsProtocolError("forbidden-key", `key "${key}" is not allowed`);
    if (typeof value === "number") return new _RawNumber(context?.source ?? String(value));
    return value;
  };
  try {
    return JSON.parse(line, reviver as Parameters<typeof JSON.parse>[1]);
  } catch (e) {
    if (e instanceof TurnsProtocolError) throw e;
    throw new TurnsProtocolError(
      "bad-json",
      `line is not JSON (${e instanceof Error ? e.message : String(e)})`,
      undefined,
      {
        cause: e,
      },
    );
  }
}

function _bad(type: string, field: string, want: string, got: unknown): TurnsProtocolError {
  const shown = got instanceof _RawNumber ? got.source : JSON.stringify(got) ?? String(got);
  return new TurnsProtocolError("bad-field", `${type}.${field} must be ${want}, got ${shown.slice(0, 80)}`, type);
}

function _wholeNumber(type: string, field: string, v: unknown, want: string): bigint {
  if (!(v instanceof _RawNumber) || !INT_RE.test(v.source)) throw _bad(type, field, want, v);
  return BigInt(v.source);
}

function _readField(type: string, field: string, kind: FieldKind, v: unknown): unknown {
  switch (kind) {
    case "uuid":
      if (typeof v !== "string" || !UUID_RE.test(v)) throw _bad(type, field, "a UUID string", v);
      return v;
    case "short-string":
      if (typeof v !== "string" || v.length === 0 || v.length > MAX_SHORT_STRING) {
        throw _bad(type, field, `a string of 1 to ${MAX_SHORT_STRING} characters`, v);
      }
      return v;
    case "hex-256":
      if (typeof v !== "string" || !HEX256_RE.test(v)) throw _bad(type, field, "64 lowercase hex digits", v);
      return v;
    case "turn-id-or-null":
    case "turn-id":
    case "epoch":
    case "duration-ms": {
      if (v === null && kind === "turn-id-or-null") return null;
      const want = kind === "duration-ms"
        ? "whole milliseconds (an integer ≥ 0)"
        : kind === "epoch"
        ? "an epoch (an integer ≥ 0)"
        : "a turn id (an integer ≥ 0)";
      const n = _wholeNumber(type, field, v, kind === "turn-id-or-null" ? `${want} or null` : want);
      if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw _bad(type, field, `at most ${Number.MAX_SAFE_INTEGER}`, v);
      return Number(n);
    }
    case "timestamp-ns": {
      const n = _wholeNumber(type, field, v, "integer nanoseconds since the Unix epoch");
      if (n > U64_MAX) throw _bad(type, field, "at most 2^64-1 nanoseconds", v);
      return n;
    }
    case "env":
      return _readEnv(type, field, v);
  }
}

function _readEnv(type: string, field: string, v: unknown): Record<string, string> {
  if (typeof v !== "object" || v === null || Array.isArray(v) || v instanceof _RawNumber) {
    throw _bad(type, field, "an object of string to string", v);
  }
  const keys = Object.keys(v);
  if (keys.length > MAX_ENV_ENTRIES) throw _bad(type, field, `at most ${MAX_ENV_ENTRIES} entries`, `${keys.length}`);
  const entries: [string, string][] = [];
  for (const k of keys) {
    _checkEnvName(type, field, k);
    const val = (v as Record<string, unknown>)[k];
    if (typeof val !== "string" || val.includes("\0")) throw _bad(type, `${field}.${k}`, "a string without NUL", val);
    entries.push([k, val]);
  }
  return Object.fromEntries(entries);
}

function _checkEnvName(type: string, field: string, k: string): void {
  if (k.length === 0 || k.length > MAX_ENV_NAME || k.includes("=") || k.includes("\0")) {
    throw _bad(type, field, `keys of 1 to ${MAX_ENV_NAME} characters without "=" or NUL`, k);
  }
}

/** Decodes one line (without its newline) sent in `direction`; throws {@link TurnsProtocolError} on refusal. */
export function decodeLine(line: string, direction: "host-to-guest"): HostMessage;
export function decodeLine(line: string, direction: "guest-to-host"): GuestMessage;
export function decodeLine(line: string, direction: Direction): TurnsMessage;
export function decodeLine(line: string, direction: Direction): TurnsMessage {
  const v = _parse(line);
  if (typeof v !== "object" || v === null || Array.isArray(v) || v instanceof _RawNumber) {
    throw new TurnsProtocolError("not-an-object", "a message is a JSON object");
  }
  const obj = v as Record<string, unknown>;
  const type = obj.type;
  if (typeof type !== "string") throw new TurnsProtocolError("missing-type", "the message has no string `type`");
  if (!isMessageType(type)) {
    throw new TurnsProtocolError("unknown-type", `"${type.slice(0, 64)}" is not a message of the protocol`, type);
  }
  const schema = MESSAGE_SCHEMAS[type];
  if (!schema.directions.includes(direction)) {
    const way = schema.directions[0] === "guest-to-host" ? "guest→host" : "host→guest";
    throw new TurnsProtocolError("wrong-direction", `${type} is sent ${way} only`, type);
  }
  for (const k of Object.keys(obj)) {
    if (k !== "type" && !Object.hasOwn(schema.fields, k)) {
      throw new TurnsProtocolError("unknown-field", `${type} has no field "${k.slice(0, 64)}"`, type);
    }
  }
  const out: Record<string, unknown> = { type };
  for (const [field, kind] of Object.entries(schema.fields)) {
    if (!Object.hasOwn(obj, field)) {
      throw new TurnsProtocolError("missing-field", `${type}.${field} is required`, type);
    }
    out[field] = _readField(type, field, kind, obj[field]);
  }
  return out as unknown as TurnsMessage;
}

function _writeField(type: string, field: string, kind: FieldKind, v: unknown): string {
  switch (kind) {
    case "uuid":
    case "short-string":
    case "hex-256":
      if (typeof v !== "string") throw _bad(type, field, "a string", v);
      _readField(type, field, kind, v);
      return JSON.stringify(v);
    case "turn-id-or-null":
    case "turn-id":
    case "epoch":
    case "duration-ms":
      if (v === null && kind === "turn-id-or-null") return "null";
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw _bad(type, field, "an integer ≥ 0", v);
      return String(v);
    case "timestamp-ns":
      if (typeof v !== "bigint" || v < 0n || v > U64_MAX) throw _bad(type, field, "a bigint of 0 to 2^64-1", v);
      return v.toString();
    case "env": {
      if (typeof v !== "object" || v === null) throw _bad(type, field, "an object of string to string", v);
      const entries = Object.entries(v);
      if (entries.length > MAX_ENV_ENTRIES) throw _bad(type, field, `at most ${MAX_ENV_ENTRIES} entries`, "");
      const parts = entries.map(([k, val]) => {
        _checkEnvName(type, field, k);
        if (FORBIDDEN_KEYS.has(k)) throw new TurnsProtocolError("forbidden-key", `key "${k}" is not allowed`, type);
        if (typeof val !== "string" || val.includes("\0")) throw _bad(type, field, "string values without NUL", "");
        return `${JSON.stringify(k)}:${JSON.stringify(val)}`;
      });
      return `{${parts.join(",")}}`;
    }
  }
}

/**
 * Encodes one message as a line ending in `"\n"`, checking it against the table first, so a malformed message
 * is refused before it reaches the wire. `direction`, when given, must be one the message may travel.
 *
 * @example
 * encodeMessage({ type: "DrainAck", in_flight: null }); // '{"type":"DrainAck","in_flight":null}\n'
 */
export function encodeMessage(msg: TurnsMessage, direction?: Direction): string {
  const type = msg.type;
  if (!isMessageType(type)) throw new TurnsProtocolError("unknown-type", `"${type}" is not a message`, type);
  const schema = MESSAGE_SCHEMAS[type];
  if (direction !== undefined && !schema.directions.includes(direction)) {
    throw new TurnsProtocolError("wrong-direction", `${type} may not be sent ${direction}`, type);
  }
  const rec = msg as unknown as Record<string, unknown>;
  for (const k of Object.keys(rec)) {
    if (k !== "type" && !Object.hasOwn(schema.fields, k)) {
      throw new TurnsProtocolError("unknown-field", `${type} has no field "${k}"`, type);
    }
  }
  let line = `{"type":${JSON.stringify(type)}`;
  for (const [field, kind] of Object.entries(schema.fields)) {
    if (!Object.hasOwn(rec, field)) throw new TurnsProtocolError("missing-field", `${type}.${field} is required`, type);
    line += `,${JSON.stringify(field)}:${_writeField(type, field, kind, rec[field])}`;
  }
  return line + "}\n";
}
