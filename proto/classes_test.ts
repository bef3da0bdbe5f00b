import assert from "node:assert/strict";
import { defineNamespace } from "./classes.ts";
import { DESCRIPTOR, lookup, type NodeDesc } from "./descriptor.ts";
import { bcd, google } from "./gen/bcd.js";

type Cls = {
  new (p?: Record<string, unknown>): Record<string, unknown>;
  name: string;
  encode(m: unknown): { finish(): Uint8Array };
  decode(b: Uint8Array): Record<string, unknown>;
  toObject(m: unknown, o?: unknown): Record<string, unknown>;
  getTypeUrl(): string;
};

/** Every message type of a descriptor node, with its full name. */
function* messages(node: NodeDesc, path: string[]): Generator<[string[], NodeDesc]> {
  for (const [name, child] of Object.entries(node.nested ?? {})) {
    if (child.fields) yield [[...path, name], child];
    yield* messages(child, [...path, name]);
  }
}

/** The fields `toObject` gives a default under `defaults`: all but oneof members. */
function defaultsOf(path: string[]): Record<string, unknown> {
  const node = lookup(path);
  const members = new Set(Object.values(node?.oneofs ?? {}).flatMap((o) => o.oneof));
  return Object.fromEntries(Object.keys(node?.fields ?? {}).filter((f) => !members.has(f)).map((f) => [f, true]));
}

Deno.test("every message type of the descriptor is defined, and its encode, decode and toObject compile and run", () => {
  const namespaces: Record<string, unknown> = { bcd, google };
  let n = 0;
  for (const [path] of messages(DESCRIPTOR, [])) {
    let cur: unknown = namespaces;
    for (const p of path) cur = (cur as Record<string, unknown>)[p];
    const cls = cur as Cls;
    assert.equal(cls.name, path.at(-1));
    assert.equal(cls.getTypeUrl(), `type.googleapis.com/${path.join(".")}`);
    const bytes = cls.encode(new cls()).finish();
    assert.equal(bytes.length, 0, path.join("."));
    assert.ok(cls.decode(bytes) instanceof cls);
    const defaults = cls.toObject(new cls(), { defaults: true });
    assert.deepEqual(Object.keys(defaults).sort(), Object.keys(defaultsOf(path)).sort(), path.join("."));
    n++;
  }
  assert.ok(n > 100, `${n} message types`);
});

Deno.test("encode, decode and toObject are compiled on first call; a reference taken before still works", () => {
  const schema: NodeDesc = {
    nested: { t: { nested: { M: { fields: { s: { type: "string", id: 1 }, n: { type: "uint64", id: 2 } } } } } },
  };
  const root: Record<string, unknown> = {};
  const ns = root.t = defineNamespace(root, ["t"], schema);
  const M = ns.M as Cls;
  const stub = M.encode;
  const first = stub.call(M, { s: "a", n: 5 }).finish();
  assert.deepEqual(Array.from(first), [0x0a, 0x01, 0x61, 0x10, 0x05]);
  assert.notEqual(M.encode, stub, "the compiled encoder replaces the stub");
  assert.deepEqual(stub.call(M, { s: "a", n: 5 }).finish(), M.encode({ s: "a", n: 5 }).finish());
  assert.deepEqual({ ...M.decode(first) }, { s: "a", n: 5 });
  assert.deepEqual(M.toObject(M.decode(first), { longs: String }), { s: "a", n: "5" });
});

Deno.test("a field shape the codec does not build is refused when its type is defined, naming the field", async (t) => {
  const rows: { name: string; fields: NodeDesc["fields"]; oneofs?: NodeDesc["oneofs"]; error: RegExp }[] = [
    {
      name: "a repeated enum",
      fields: { e: { type: "E", id: 1, rule: "repeated" } },
      error: /t\.M\.e: repeated enums/,
    },
    {
      name: "a scalar oneof member",
      fields: { s: { type: "string", id: 1 } },
      oneofs: { o: { oneof: ["s"] } },
      error: /t\.M\.s: only messages may be oneof members/,
    },
    {
      name: "a map to numbers",
      fields: { m: { type: "uint32", id: 1, keyType: "string" } },
      error: /t\.M\.m: only map<string, string>/,
    },
    {
      name: "a map keyed by numbers",
      fields: { m: { type: "string", id: 1, keyType: "uint32" } },
      error: /t\.M\.m: only map<string, string>/,
    },
    {
      name: "a repeated double",
      fields: { d: { type: "double", id: 1, rule: "repeated" } },
      error: /t\.M\.d: repeated double/,
    },
    {
      name: "a repeated bool",
      fields: { b: { type: "bool", id: 1, rule: "repeated" } },
      error: /t\.M\.b: repeated bool/,
    },
    { name: "a sint32", fields: { x: { type: "sint32", id: 1 } }, error: /t\.M\.x: type sint32/ },
    { name: "a float", fields: { x: { type: "float", id: 1 } }, error: /t\.M\.x: type float/ },
    { name: "a required rule", fields: { x: { type: "string", id: 1, rule: "required" } }, error: /rule required/ },
    {
      name: "a field name that is not an identifier",
      fields: { "a; globalThis.pwned = 1": { type: "string", id: 1 } },
      error: /not an identifier/,
    },
    {
      name: "a oneof name that is not an identifier",
      fields: { m: { type: "M", id: 1 } },
      oneofs: { "o-o": { oneof: ["m"] } },
      error: /t\.M\.o-o: the oneof's name is not an identifier/,
    },
    { name: "field number 0", fields: { x: { type: "string", id: 0 } }, error: /t\.M\.x: field number 0/ },
    { name: "a type that does not resolve", fields: { x: { type: "Nope", id: 1 } }, error: /cannot resolve type Nope/ },
  ];
  for (const row of rows) {
    await t.step(row.name, () => {
      const M: NodeDesc = { fields: row.fields, ...(row.oneofs ? { oneofs: row.oneofs } : {}) };
      const schema: NodeDesc = { nested: { t: { nested: { M, E: { values: { E_ZERO: 0 } } } } } };
      const root: Record<string, unknown> = {};
      const ns = root.t = defineNamespace(root, ["t"], schema);
      assert.throws(() => ns.M, row.error);
      assert.equal((globalThis as Record<string, unknown>).pwned, undefined);
    });
  }
});
