/**
 * The committed reflection descriptor (`proto/gen/bcd.json`, generated beside the static code) and name resolution over
 * it, for the checks that need the schema without loading protobufjs' reflection runtime: the strict JSON check and
 * the wire pre-scan that bounds how many messages a body may make a decoder allocate.
 *
 * @module
 */

import descriptor from "./gen/bcd.json" with { type: "json" };

/** A field as the descriptor records it. */
export interface FieldDesc {
  readonly type: string;
  readonly id: number;
  readonly rule?: string;
  readonly keyType?: string;
}

/** A namespace, message or enum as the descriptor records it. */
export interface NodeDesc {
  readonly fields?: Readonly<Record<string, FieldDesc>>;
  readonly oneofs?: Readonly<Record<string, { readonly oneof: readonly string[] }>>;
  readonly values?: Readonly<Record<string, number>>;
  readonly nested?: Readonly<Record<string, NodeDesc>>;
}

/** A resolved message or enum: its full path and its description. */
export interface Resolved {
  readonly path: readonly string[];
  readonly node: NodeDesc;
}

/** The committed descriptor's root: the namespaces `bcd` and `google`. */
export const DESCRIPTOR: NodeDesc = descriptor as NodeDesc;

/** The node at `path` (`["bcd", "v1", "NodeSpec"]`) of `schema` (the committed descriptor unless given), or undefined. */
export function lookup(path: readonly string[], schema: NodeDesc = DESCRIPTOR): NodeDesc | undefined {
  let cur: NodeDesc | undefined = schema;
  for (const name of path) cur = cur?.nested?.[name];
  return cur;
}

const resolved = new Map<string, Resolved>();

/**
 * Resolves a type name as protobuf scoping does: from the innermost enclosing scope outwards. In the committed
 * descriptor unless `schema` is given; cached for the committed descriptor.
 */
export function resolve(scope: readonly string[], name: string, schema: NodeDesc = DESCRIPTOR): Resolved {
  const key = `${scope.join(".")}|${name}`;
  const cached = schema === DESCRIPTOR;
  const hit = cached ? resolved.get(key) : undefined;
  if (hit) return hit;
  const parts = name.replace(/^\./, "").split(".");
  for (let i = name.startsWith(".") ? 0 : scope.length; i >= 0; i--) {
    const path = [...scope.slice(0, i), ...parts];
    const node = lookup(path, schema);
    if (node) {
      const r = { path, node };
      if (cached) resolved.set(key, r);
      return r;
    }
  }
  throw new Error(`descriptor: cannot resolve type ${name} from ${scope.join(".")}`);
}

/** The scalar types of proto3. */
export const SCALAR_TYPES: ReadonlySet<string> = new Set([
  "double",
  "float",
  "int32",
  "int64",
  "uint32",
  "uint64",
  "sint32",
  "sint64",
  "fixed32",
  "fixed64",
  "sfixed32",
  "sfixed64",
  "bool",
  "string",
  "bytes",
]);
