/**
 * The message classes of `bcd.v1` built from the committed descriptor (`gen/bcd.json`), instead of `pbjs`'s static
 * module, which writes a constructor, encoder, decoder and converter out in full for each of ~130 types. That module
 * was ~430 of the 736 KiB of the bundled sim, and code a process only loads still costs its start (issue 24); the
 * descriptor is loaded anyway (the wire pre-scan reads it), so the classes cost this file.
 *
 * A type is defined on its first read (`bcd.v1.Hello`): its field table, prototype defaults and oneof accessors. Its
 * `encode`, `decode` and `toObject` are compiled on their own first call, from source written here from the table:
 * the code `pbjs` writes for that type, reading and writing each field by name (V8's fast property access). One
 * interpreter over the tables for every type, measured first, started 1-2 ms sooner but decoded a NodeSpec at 0.43x
 * the static code's speed (its property accesses see every type's names); the compiled code runs at the static code's
 * speed (`deno task bench:proto`). Only the committed descriptor reaches the source: every name written into it is
 * checked to be an identifier, every number is a number.
 *
 * The classes keep the static module's whole surface and behaviour, which `runtime/runtime_test.ts` holds them to
 * against that module (committed as `gen/bcd_static.js`, run on protobufjs' own runtime): a constructor taking
 * properties, defaults on the prototype, a oneof's discriminator as a prototype accessor, `create`, `encode(message,
 * writer?)`, `decode(reader | bytes, length?)`, `toObject(message, options?)`, `toJSON`, `getTypeUrl`, nested enums
 * and types as lazy statics; `gen/bcd_from_object.js` still installs `fromObject`. The same bytes, the same decoded
 * values (proto3's implicit presence: a zero scalar is deleted, not set) with their keys in the same order, the same
 * errors, the same object forms in the same key order.
 *
 * Only the field shapes bcd's schema uses are built: the proto3 scalars `string`, `bytes`, `bool`, `uint32`, `int32`,
 * `uint64`, `int64`, `double`, enums and messages, singular or repeated (repeated numbers: `uint32` and `uint64`,
 * packed), `map<string, string>`, and oneofs of messages. Any other shape throws when its type is first defined,
 * naming the field, rather than be coded wrong (`classes_test.ts`, a row per shape).
 *
 * @module
 */

import { DESCRIPTOR, lookup, type NodeDesc, resolve, SCALAR_TYPES } from "./descriptor.ts";
import runtime, { Reader, Writer } from "./runtime/mod.ts";
import type { IConversionOptions } from "./runtime/mod.ts";
import { bytesDefault, copyMap, longTo, readMapEntry } from "./codec_support.ts";
import { takeStartCodecs } from "./gen/bcd_start_codecs.js";

const util = runtime.util;
const hasOwn = Object.prototype.hasOwnProperty;

// The kinds of field the codec knows; each `case` below handles one.
const K_STRING = 0, K_BOOL = 1, K_UINT32 = 2, K_INT32 = 3, K_UINT64 = 4, K_INT64 = 5, K_DOUBLE = 6;
const K_BYTES = 7, K_ENUM = 8, K_MESSAGE = 9, K_MAP = 10;

const SCALAR_KIND: Readonly<Record<string, number>> = {
  string: K_STRING,
  bool: K_BOOL,
  uint32: K_UINT32,
  int32: K_INT32,
  uint64: K_UINT64,
  int64: K_INT64,
  double: K_DOUBLE,
  bytes: K_BYTES,
};

/** Each kind's wire type: 0 varint, 1 64-bit, 2 length-delimited. */
const WIRE_TYPE = [2, 0, 0, 0, 0, 0, 1, 2, 0, 2, 2];

/** What a field or oneof name must be to be written into a compiled encoder (`m.name`). */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

type Obj = Record<string, unknown>;
type Enum = Record<string, unknown>;

/** What a message class is: the static module's class shape, loosely typed (`bcd.d.ts` types each one). */
interface MessageClass {
  new (properties?: Obj): Obj;
  prototype: Obj;
  create(properties?: Obj): Obj;
  encode(message: Obj, writer?: Writer, depth?: number): Writer;
  decode(reader: Reader | Uint8Array, length?: number, end?: number, depth?: number, target?: Obj): Obj;
  toObject(message: Obj, options?: IConversionOptions, depth?: number): Obj;
  getTypeUrl(prefix?: string): string;
}

interface Field {
  readonly name: string;
  readonly id: number;
  readonly kind: number;
  readonly repeated: boolean;
  /** A repeated number: written packed, read packed or not. */
  readonly packed: boolean;
  /** The oneof this field is a member of. */
  readonly oneof: string | undefined;
  /** The key the field is written with (packed numbers: wire type 2). */
  readonly tag: number;
  /** A message field's class or an enum field's values, on first use (the type may not be defined yet). */
  readonly type: () => MessageClass & Enum;
  /** An enum's first value (its default): the name, the number. */
  readonly enumDefault: readonly [string, number] | undefined;
}

/** `$lazy` of the static module: `o[k]` is `f()`, computed on first read, then an ordinary writable property. */
function lazyProperty(o: object, k: string, f: () => unknown): void {
  Object.defineProperty(o, k, {
    configurable: true,
    enumerable: true,
    get() {
      const value = f();
      Object.defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });
      return value;
    },
    set(value) {
      Object.defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });
    },
  });
}

/**
 * The namespace at `path` of the descriptor (`["bcd"]`, `["google"]`) as the static module built it: a plain object
 * per package level, each message and enum a lazy property defined on first read; registered under `root` so types
 * can reach each other by full name.
 */
export function defineNamespace(root: Obj, path: readonly string[], schema: NodeDesc = DESCRIPTOR): Obj {
  const node = lookup(path, schema);
  if (!node) throw new Error(`descriptor: no namespace ${path.join(".")}`);
  const ns: Obj = {};
  for (const [name, child] of Object.entries(node.nested ?? {})) {
    if (child.fields || child.values) lazyProperty(ns, name, () => defineType(root, [...path, name], child, schema));
    else ns[name] = defineNamespace(root, [...path, name], schema);
  }
  return ns;
}

function defineType(root: Obj, path: readonly string[], node: NodeDesc, schema: NodeDesc): unknown {
  const made = node.values ? defineEnum(node.values) : defineMessage(root, path, node, schema);
  for (const [name, child] of Object.entries(node.fields ? node.nested ?? {} : {})) {
    lazyProperty(made as object, name, () => defineType(root, [...path, name], child, schema));
  }
  return made;
}

/** An enum as the static module built it: names to numbers, and numbers to names through its prototype. */
function defineEnum(values: Readonly<Record<string, number>>): Enum {
  const valuesById: Record<number, string> = Object.create(null);
  const byName: Record<string, number> = Object.create(valuesById);
  for (const [name, id] of Object.entries(values)) byName[valuesById[id] = name] = id;
  return byName;
}

/** The class at `path` of `root`, read through its namespaces' lazy properties. */
function typeAt(root: Obj, path: readonly string[]): MessageClass & Enum {
  let cur: unknown = root;
  for (const p of path) cur = (cur as Obj)[p];
  return cur as MessageClass & Enum;
}

function fieldsOf(root: Obj, path: readonly string[], node: NodeDesc, schema: NodeDesc): Field[] {
  const fullName = path.join(".");
  const oneofOf = new Map<string, string>();
  for (const [oneof, { oneof: members }] of Object.entries(node.oneofs ?? {})) {
    if (!IDENTIFIER.test(oneof)) throw new Error(`${fullName}.${oneof}: the oneof's name is not an identifier`);
    for (const m of members) oneofOf.set(m, oneof);
  }
  const fields: Field[] = [];
  for (const [name, desc] of Object.entries(node.fields ?? {})) {
    const where = `${fullName}.${name}`;
    if (!IDENTIFIER.test(name)) throw new Error(`${where}: the field's name is not an identifier`);
    if (!Number.isSafeInteger(desc.id) || desc.id < 1) throw new Error(`${where}: field number ${desc.id}`);
    const repeated = desc.rule === "repeated";
    if (desc.rule !== undefined && !repeated) throw new Error(`${where}: rule ${desc.rule} is not supported`);
    let kind = SCALAR_KIND[desc.type];
    let type: () => MessageClass & Enum = () => {
      throw new Error(`${where} has no type`);
    };
    let enumDefault: [string, number] | undefined;
    if (desc.keyType !== undefined) {
      if (desc.keyType !== "string" || desc.type !== "string") {
        throw new Error(`${where}: only map<string, string> is supported`);
      }
      kind = K_MAP;
    } else if (kind === undefined && SCALAR_TYPES.has(desc.type)) {
      throw new Error(`${where}: type ${desc.type} is not supported`);
    } else if (kind === undefined) {
      const target = resolve(path, desc.type, schema);
      if (target.node.values) {
        kind = K_ENUM;
        const first = Object.entries(target.node.values)[0];
        if (!first) throw new Error(`${where}: enum ${desc.type} has no values`);
        enumDefault = first;
      } else if (target.node.fields) {
        kind = K_MESSAGE;
      } else {
        throw new Error(`${where}: type ${desc.type} is neither a message nor an enum`);
      }
      let cached: (MessageClass & Enum) | undefined;
      type = () => cached ??= typeAt(root, target.path);
    }
    if (kind === undefined) throw new Error(`${where}: type ${desc.type} is not supported`);
    const oneof = oneofOf.get(name);
    if (oneof !== undefined && kind !== K_MESSAGE) throw new Error(`${where}: only messages may be oneof members`);
    if (repeated && kind === K_ENUM) throw new Error(`${where}: repeated enums are not supported`);
    const packed = repeated && WIRE_TYPE[kind] !== 2;
    if (packed && kind !== K_UINT32 && kind !== K_UINT64) {
      throw new Error(`${where}: repeated ${desc.type} is not supported`);
    }
    const tag = desc.id * 8 + (packed ? 2 : WIRE_TYPE[kind]!);
    fields.push({ name, id: desc.id, kind, repeated, packed, oneof, tag, type, enumDefault });
  }
  // Written, read and converted in field-number order, as pbjs orders them.
  return fields.sort((a, b) => a.id - b.id);
}

/** The default a field has on the prototype (a message not yet set reads null; lists and maps frozen empties). */
function prototypeDefault(f: Field): unknown {
  if (f.repeated) return util.emptyArray;
  switch (f.kind) {
    case K_STRING:
      return "";
    case K_BOOL:
      return false;
    case K_BYTES:
      return util.newBuffer([]);
    case K_MESSAGE:
      return null;
    case K_MAP:
      return util.emptyObject;
    case K_ENUM:
      return f.enumDefault![1];
    default:
      return 0;
  }
}

// The source of each type's encode, decode and toObject. Free names: C the class, R Reader, W Writer, U util, H
// hasOwnProperty, T the fields' types (getters), P readMapEntry, L longTo, M copyMap, B bytesDefault (C and T under
// the names a CodecNames gives).

/** The writer method of each scalar kind (enums are written as int32). */
const WRITE = ["string", "bool", "uint32", "int32", "uint64", "int64", "double", "bytes", "int32"];

/** A singular, implicit-presence value that is not its type's default (proto3 writes only those). */
function notDefault(kind: number, v: string): string {
  switch (kind) {
    case K_STRING:
      return `${v} !== ""`;
    case K_BOOL:
      return `${v} !== false`;
    case K_BYTES:
      return `${v}.length`;
    case K_DOUBLE:
      return `!Object.is(${v}, 0)`;
    case K_UINT64:
    case K_INT64:
      return `(typeof ${v} === "object" ? ${v}.low || ${v}.high : ${v} !== 0)`;
    default:
      return `${v} !== 0`;
  }
}

/**
 * The names a codec's source is written with: the function's own (`encode`), and the free names of its class and of its
 * fields' types (`C`, `T` where {@link compile} binds them; module-level names in `gen/bcd_start_codecs.js`).
 */
export interface CodecNames {
  readonly fn: string;
  readonly C: string;
  readonly T: string;
}

/** A codec's opening: its declaration, and the nesting bound (`d`, the depth) each checks first. */
function opening(n: CodecNames, params: string, bound: "U" | "R"): string[] {
  return [
    `function ${n.fn}(${params}) {`,
    "if (d === undefined) d = 0;",
    `if (d > ${bound}.recursionLimit) throw Error("max depth exceeded");`,
  ];
}

function encodeSource(fields: readonly Field[], n: CodecNames): string {
  const out = [...opening(n, "m, w, d", "U"), "if (!w) w = W.create();"];
  for (const [i, f] of fields.entries()) {
    const v = `m.${f.name}`, key = `w.uint32(${f.tag})`;
    const one = (x: string) =>
      f.kind === K_MESSAGE
        ? `${n.T}[${i}]().encode(${x}, ${key}.fork(), d + 1).ldelim();`
        : `${key}.${WRITE[f.kind]}(${x});`;
    if (f.repeated) {
      out.push(
        f.packed
          ? `if (${v} != null && ${v}.length) ${key}.${WRITE[f.kind]}s(${v});`
          : `if (${v} != null && ${v}.length) for (let i = 0; i < ${v}.length; ++i) ${one(`${v}[i]`)}`,
      );
      continue;
    }
    const present = `${v} != null && H.call(m, "${f.name}")`;
    if (f.kind === K_MAP) {
      out.push(
        `if (${present}) for (let k = Object.keys(${v}), i = 0; i < k.length; ++i)`,
        `${key}.fork().uint32(10).string(k[i]).uint32(18).string(${v}[k[i]]).ldelim();`,
      );
    } else if (f.kind === K_MESSAGE) out.push(`if (${present}) ${one(v)}`);
    else out.push(`if (${present} && ${notDefault(f.kind, v)}) ${one(v)}`);
  }
  out.push(
    'if (m.$unknowns != null && H.call(m, "$unknowns"))',
    "for (let i = 0; i < m.$unknowns.length; ++i) w.raw(m.$unknowns[i]);",
    "return w;",
    "}",
  );
  return out.join("\n");
}

/** The reader method of each scalar kind. */
const READ = ["stringVerify", "bool", "uint32", "int32", "uint64", "int64", "double", "bytes", "int32"];

function decodeSource(fields: readonly Field[], n: CodecNames): string {
  const out = [
    ...opening(n, "r, l, e, d, t", "R"),
    "if (!(r instanceof R)) r = R.create(r);",
    "let end, m, v;",
    "if (l === undefined) end = r.len;",
    'else { end = r.pos + l; if (end > r.len) throw RangeError("index out of range"); l = r.len; r.len = end; }',
    `m = t || new ${n.C}();`,
    "while (r.pos < end) {",
    "const s = r.pos;",
    "let g = r.tag();",
    "if (g === e) { e = undefined; break; }",
    "const wt = g & 7;",
    "switch (g >>>= 3) {",
  ];
  for (const [i, f] of fields.entries()) {
    const v = `m.${f.name}`;
    out.push(`case ${f.id}: {`);
    const read = f.kind === K_MESSAGE
      ? `${n.T}[${i}]().decode(r, r.size(), undefined, d + 1${f.repeated ? "" : `, ${v}`})`
      : `r.${READ[f.kind]}()`;
    if (f.repeated) {
      const fresh = `if (!(${v} && ${v}.length)) ${v} = [];`;
      if (f.packed) out.push(`if (wt === 2) { ${fresh} r.${READ[f.kind]}s(${v}); continue; }`);
      out.push(`if (wt !== ${WIRE_TYPE[f.kind]}) break;`, fresh, `${v}.push(${read});`);
    } else if (f.kind === K_MAP) {
      out.push("if (wt !== 2) break;", `P(r, m, "${f.name}", d);`);
    } else if (f.kind === K_MESSAGE) {
      out.push("if (wt !== 2) break;", `${v} = ${read};`);
      if (f.oneof !== undefined) out.push(`m.${f.oneof} = "${f.name}";`);
    } else {
      out.push(`if (wt !== ${WIRE_TYPE[f.kind]}) break;`, `v = ${read};`);
      out.push(`if (${notDefault(f.kind, "v")}) ${v} = v;`, `else delete ${v};`);
    }
    out.push("continue;", "}");
  }
  out.push(
    "}",
    "r.skipType(wt, d, g);",
    "if (!r.discardUnknown) {",
    'U.makeProp(m, "$unknowns", false);',
    "(m.$unknowns || (m.$unknowns = [])).push(r.raw(s, r.pos));",
    "}",
    "}",
    'if (l !== undefined) { if (r.pos !== end) throw RangeError("index out of range"); r.len = l; }',
    'if (e !== undefined) throw Error("missing end group");',
    "return m;",
    "}",
  );
  return out.join("\n");
}

/** The object form of value `x` of field `i`. */
function plainSource(f: Field, i: number, x: string, T: string): string {
  switch (f.kind) {
    case K_DOUBLE:
      return `o.json && !isFinite(${x}) ? String(${x}) : ${x}`;
    case K_ENUM:
      return `o.enums === String ? (${T}[${i}]()[${x}] === undefined ? ${x} : ${T}[${i}]()[${x}]) : ${x}`;
    case K_UINT64:
    case K_INT64:
      return `L(${x}, o, ${f.kind === K_UINT64})`;
    case K_BYTES:
      return `o.bytes === String ? U.base64.encode(${x}, 0, ${x}.length) : o.bytes === Array ? Array.prototype.slice.call(${x}) : ${x}`;
    case K_MESSAGE:
      return `${T}[${i}]().toObject(${x}, o, d + 1)`;
    default:
      return x;
  }
}

/** An absent field's object form under `defaults`. */
function defaultSource(f: Field): string {
  switch (f.kind) {
    case K_STRING:
      return '""';
    case K_BOOL:
      return "false";
    case K_MESSAGE:
      return "null";
    case K_ENUM:
      return `o.enums === String ? ${JSON.stringify(f.enumDefault![0])} : ${f.enumDefault![1]}`;
    case K_UINT64:
    case K_INT64:
      return 'o.longs === String ? "0" : typeof BigInt !== "undefined" && o.longs === BigInt ? BigInt("0") : 0';
    case K_BYTES:
      return "B(o)";
    default:
      return "0";
  }
}

function toObjectSource(fields: readonly Field[], n: CodecNames): string {
  const out = [...opening(n, "m, o, d", "U"), "if (!o) o = {};", "const b = {};"];
  // As pbjs orders them: lists' and maps' empties, then the other defaults, then the values, in field order.
  const lists = fields.filter((f) => f.repeated), maps = fields.filter((f) => f.kind === K_MAP);
  const singles = fields.filter((f) => !f.repeated && f.kind !== K_MAP && f.oneof === undefined);
  if (lists.length) out.push(`if (o.arrays || o.defaults) { ${lists.map((f) => `b.${f.name} = [];`).join(" ")} }`);
  if (maps.length) out.push(`if (o.objects || o.defaults) { ${maps.map((f) => `b.${f.name} = {};`).join(" ")} }`);
  if (singles.length) {
    out.push(`if (o.defaults) { ${singles.map((f) => `b.${f.name} = ${defaultSource(f)};`).join(" ")} }`);
  }
  for (const [i, f] of fields.entries()) {
    const v = `m.${f.name}`;
    if (f.repeated) {
      out.push(
        `if (${v} && ${v}.length) { b.${f.name} = Array(${v}.length);`,
        `for (let j = 0; j < ${v}.length; ++j) b.${f.name}[j] = ${plainSource(f, i, `${v}[j]`, n.T)}; }`,
      );
    } else if (f.kind === K_MAP) {
      out.push(`if (${v} && Object.keys(${v}).length) b.${f.name} = M(${v});`);
    } else {
      const oneof = f.oneof === undefined ? "" : ` if (o.oneofs) b.${f.oneof} = "${f.name}";`;
      out.push(`if (${v} != null && H.call(m, "${f.name}")) { b.${f.name} = ${plainSource(f, i, v, n.T)};${oneof} }`);
    }
  }
  out.push("return b;", "}");
  return out.join("\n");
}

/** Compiles `source` (a function's declaration) with `env`'s entries as its free names, in strict mode as a module is. */
function compile<F>(source: string, env: Record<string, unknown>): F {
  return new Function(...Object.keys(env), `"use strict";\nreturn ${source};`)(...Object.values(env)) as F;
}

/** A codec of a message class. */
export type CodecKey = "encode" | "decode" | "toObject";

const SOURCE: Readonly<Record<CodecKey, (fields: readonly Field[], n: CodecNames) => string>> = {
  encode: encodeSource,
  decode: decodeSource,
  toObject: toObjectSource,
};

/**
 * The source of codec `key` of the message at `path` of `schema` (the committed descriptor unless given), a function
 * declaration written with names `n`: what a class compiles on that codec's first call, for `gen/bcd_start_codecs.js`.
 */
export function codecSource(
  path: readonly string[],
  key: CodecKey,
  n: CodecNames,
  schema: NodeDesc = DESCRIPTOR,
): string {
  const node = lookup(path, schema);
  if (!node?.fields) throw new Error(`descriptor: no message ${path.join(".")}`);
  // The fields' type getters are not called to write source, so they need no namespace to read.
  return SOURCE[key](fieldsOf({}, path, node, schema), n);
}

function defineMessage(root: Obj, path: readonly string[], node: NodeDesc, schema: NodeDesc): MessageClass {
  const fullName = path.join(".");
  const fields = fieldsOf(root, path, node, schema);
  const made = fields.filter((f) => f.repeated || f.kind === K_MAP);
  const Cls = function (this: Obj, properties?: Obj) {
    for (let i = 0; i < made.length; ++i) this[made[i]!.name] = made[i]!.repeated ? [] : {};
    if (properties) {
      for (let keys = Object.keys(properties), i = 0; i < keys.length; ++i) {
        if (properties[keys[i]!] != null && keys[i] !== "__proto__") this[keys[i]!] = properties[keys[i]!];
      }
    }
  } as unknown as MessageClass;
  Object.defineProperty(Cls, "name", { value: path[path.length - 1] });
  for (const f of fields) Cls.prototype[f.name] = prototypeDefault(f);
  for (const [oneof, { oneof: members }] of Object.entries(node.oneofs ?? {})) {
    Object.defineProperty(Cls.prototype, oneof, { get: util.oneOfGetter(members), set: util.oneOfSetter(members) });
  }
  const T = fields.map((f) => f.type);
  const env = {
    C: Cls,
    R: Reader,
    W: Writer,
    U: util,
    H: hasOwn,
    T,
    P: readMapEntry,
    L: longTo,
    M: copyMap,
    B: bytesDefault,
  };
  // The codecs every agent's start calls come compiled with the build (`start_codecs.ts`), bound to the committed
  // descriptor's first class of their type; the rest are compiled on their first call, not with the type: a process
  // uses few of the functions of the types it defines (the sim, before its Hello, defines 11 types and calls 8 of
  // their 33), and compiling all three with each type made the sim's start no faster than pbjs' module.
  const built = schema === DESCRIPTOR ? takeStartCodecs(fullName, Cls, T) : undefined;
  const onFirstCall = <K extends CodecKey>(key: K) => {
    const made = built?.[key] as MessageClass[K] | undefined;
    if (made !== undefined) {
      Cls[key] = made;
      return;
    }
    let compiled: MessageClass[K] | undefined;
    Cls[key] = ((...args: unknown[]) => {
      if (compiled === undefined) {
        Cls[key] = compiled = compile<MessageClass[K]>(SOURCE[key](fields, { fn: key, C: "C", T: "T" }), env);
      }
      return (compiled as (...a: unknown[]) => unknown)(...args);
    }) as MessageClass[K];
  };
  Cls.create = (properties?: Obj) => new Cls(properties);
  onFirstCall("encode");
  onFirstCall("decode");
  onFirstCall("toObject");
  Cls.prototype.toJSON = function (this: Obj) {
    return Cls.toObject(this, util.toJSONOptions);
  };
  Cls.getTypeUrl = (prefix = "type.googleapis.com") => `${prefix}/${fullName}`;
  return Cls;
}
