// bcd's classes and runtime against protobufjs': bcd's classes (`proto/gen/bcd.js`, built from the descriptor by
// `proto/classes.ts`) on bcd's runtime, and `pbjs`'s static module of the same schema (`proto/gen/bcd_static.js`) with
// its runtime import pointed at protobufjs/minimal (configured as bcd configured it); every message type is encoded,
// decoded and converted by both. Bytes, decoded values, errors and object forms (key order included) must be the same.
import assert from "node:assert/strict";
import type protobuf from "protobufjs";
import {
  allMessageTypes,
  byteMutator,
  fillMessage,
  fillVariants,
  plain,
  reflectionRoot,
  staticClassOf,
} from "../_reflect_fill.ts";
import { bcd, google } from "../gen/bcd.js";
import "../gen/bcd_from_object.js";
import { decodeMessage, WireDecodeError } from "../wire.ts";
import runtime, { Reader, Writer } from "./mod.ts";
import reference from "./_protobufjs_reference.ts";
import { onProtobufjs } from "./_on_protobufjs.ts";

type Cls = {
  encode(m: unknown): { finish(): Uint8Array };
  decode(b: Uint8Array): unknown;
  fromObject(o: unknown): unknown;
  toObject(m: unknown, o?: unknown): unknown;
};

const GEN = new URL("../gen/bcd_static.js", import.meta.url);

const root = reflectionRoot();
const types = allMessageTypes(root);
const theirs = await onProtobufjs();
const ours = { bcd, google };
const pair = (type: protobuf.Type): [Cls, Cls] => [
  staticClassOf(type, ours) as unknown as Cls,
  staticClassOf(type, theirs) as unknown as Cls,
];

// Edge values per scalar type: defaults, varint length boundaries, extremes, unicode, long and empty values.
const EDGES: Record<string, unknown[]> = {
  string: ["", "a", "ü", "€", "😀 and 🚀", "x".repeat(127), "y".repeat(128), "é".repeat(300), "\u0000\uffff"],
  bytes: [
    new Uint8Array(0),
    new Uint8Array([0]),
    new Uint8Array(127).fill(0xff),
    new Uint8Array(128).fill(0x80),
    new Uint8Array(70_000).map((_, i) => i & 0xff),
  ],
  uint32: [0, 1, 127, 128, 16383, 16384, 2 ** 28, 4294967295],
  int32: [0, 1, -1, 127, 128, 2147483647, -2147483648],
  uint64: [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 35, Number.MAX_SAFE_INTEGER],
  int64: [0, -1, 1, -(2 ** 32), 2 ** 40, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER],
  double: [0, -0, 1.5, -2.25, Number.MIN_VALUE, Number.MAX_VALUE, Infinity, -Infinity, NaN],
  bool: [false, true],
};
const EDGE_ROUNDS = Math.max(...Object.values(EDGES).map((v) => v.length));
const edgePick = (k: number) => (type: string, name: string, i: number): unknown => {
  const values = EDGES[type];
  if (!values) throw new TypeError(`no edge values for scalar type ${type} (field ${name})`);
  return values[(k + i) % values.length];
};

/** Every value the tables below encode for `type`: every oneof member, then every edge round. */
function values(type: protobuf.Type): Record<string, unknown>[] {
  return [
    ...fillVariants(type),
    ...Array.from({ length: EDGE_ROUNDS }, (_, k) => fillMessage(type, k, 0, edgePick(k))),
  ];
}

Deno.test("every message encodes to protobufjs' bytes, filled and with edge values", () => {
  let compared = 0;
  for (const type of types) {
    const [mine, ref] = pair(type);
    for (const [i, value] of values(type).entries()) {
      assert.deepEqual(mine.encode(value).finish(), ref.encode(value).finish(), `${type.fullName} value ${i}`);
      compared++;
    }
  }
  assert.ok(compared > types.length * EDGE_ROUNDS, `${compared} comparisons`);
});

/**
 * A decoded message's own keys, in order, and its class name, down through every sub-message and list: what `plain`
 * leaves out (a field set to its default, the order fields were set in).
 */
function shape(v: unknown): unknown {
  if (v === null || typeof v !== "object" || v instanceof Uint8Array) return typeof v;
  if (Array.isArray(v)) return v.map(shape);
  const o = v as Record<string, unknown>;
  return [o.constructor?.name, ...Object.keys(o).map((k) => [k, shape(o[k])])];
}

Deno.test("bcd's decoders read protobufjs' bytes to the values protobufjs reads", () => {
  for (const type of types) {
    const [mine, ref] = pair(type);
    for (const [i, value] of values(type).entries()) {
      const bytes = ref.encode(value).finish();
      const a = mine.decode(bytes), b = ref.decode(bytes);
      assert.deepEqual(plain(type, a), plain(type, b), `${type.fullName} value ${i}`);
      assert.deepEqual(shape(a), shape(b), `${type.fullName} value ${i}: own keys`);
      assert.equal(JSON.stringify(a), JSON.stringify(b), `${type.fullName} value ${i}: toJSON`);
    }
  }
});

Deno.test("toObject and fromObject agree with protobufjs', base64 and 64-bit strings included", () => {
  const optionSets = [
    { longs: String, enums: String, bytes: String, defaults: true, arrays: true, objects: true, oneofs: true },
    { longs: Number, bytes: Array },
    runtime.util.toJSONOptions,
  ];
  for (const type of types) {
    const [mine, ref] = pair(type);
    for (const [i, value] of values(type).entries()) {
      const a = mine.decode(mine.encode(value).finish()), b = ref.decode(ref.encode(value).finish());
      for (const options of optionSets) {
        const objA = mine.toObject(a, options), objB = ref.toObject(b, options);
        assert.deepEqual(objA, objB, `${type.fullName} value ${i} toObject`);
        assert.deepEqual(shape(objA), shape(objB), `${type.fullName} value ${i} toObject: keys in order`);
        const json = JSON.parse(JSON.stringify(objA));
        assert.deepEqual(
          mine.encode(mine.fromObject(json)).finish(),
          ref.encode(ref.fromObject(json)).finish(),
          `${type.fullName} value ${i} fromObject`,
        );
      }
    }
  }
});

/** What decoding gives: the plain value, or the error's class and message. */
function outcome(type: protobuf.Type, cls: Cls, bytes: Uint8Array): unknown {
  try {
    return { value: plain(type, cls.decode(bytes)) };
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    return { error: e.constructor.name, message: e.message };
  }
}

const t = (name: string) => root.lookupType(name);
const MAX_SAFE_PLUS_2 = [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]; // 2^53 + 1

Deno.test("malformed input is refused by both runtimes with the same error, and the same reason", async (ctx) => {
  const rows: { name: string; type: string; bytes: number[]; reason: string }[] = [
    { name: "a varint cut short (uint64)", type: "bcd.v1.Ack", bytes: [0x18, 0xff], reason: "truncated" },
    {
      name: "a varint cut short (uint32)",
      type: "bcd.v1.TelemetrySection",
      bytes: [0x10, 0x80, 0x80],
      reason: "truncated",
    },
    { name: "a varint cut short (bool)", type: "bcd.v1.Welcome", bytes: [0x28, 0x80], reason: "truncated" },
    { name: "a length past the end", type: "bcd.v1.Ack", bytes: [0x0a, 0x05, 0x61], reason: "truncated" },
    { name: "bytes past the end", type: "bcd.v1.Challenge", bytes: [0x0a, 0x09, 1, 2], reason: "truncated" },
    { name: "a sub-message past the end", type: "bcd.v1.NodeFrame", bytes: [0x0a, 0x7f, 0x0a], reason: "truncated" },
    { name: "a double cut short", type: "bcd.v1.MetricSample", bytes: [0x11, 0, 0, 0], reason: "truncated" },
    {
      name: "an 11-byte varint (uint64)",
      type: "bcd.v1.Ack",
      bytes: [0x18, ...Array(10).fill(0xff), 0x01],
      reason: "malformed",
    },
    {
      name: "an 11-byte varint (uint32)",
      type: "bcd.v1.TelemetrySection",
      bytes: [0x10, ...Array(10).fill(0xff), 0x01],
      reason: "malformed",
    },
    {
      name: "an 11-byte varint (bool)",
      type: "bcd.v1.Welcome",
      bytes: [0x28, ...Array(10).fill(0xff), 0x01],
      reason: "malformed",
    },
    {
      name: "a tag past 32 bits",
      type: "bcd.v1.Ack",
      bytes: [0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
      reason: "malformed",
    },
    {
      name: "a length past 2^31",
      type: "bcd.v1.Ack",
      bytes: [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0],
      reason: "truncated",
    },
    { name: "wire type 6", type: "bcd.v1.Ack", bytes: [0x0e], reason: "malformed" },
    { name: "wire type 7", type: "bcd.v1.Ack", bytes: [0x0f], reason: "malformed" },
    { name: "field number 0", type: "bcd.v1.Ack", bytes: [0x00], reason: "malformed" },
    { name: "an end group that does not match", type: "bcd.v1.Ack", bytes: [0x0b, 0x14], reason: "malformed" },
    {
      name: "groups nested past the recursion limit",
      type: "bcd.v1.Ack",
      bytes: Array(2000).fill(0x0b),
      reason: "too-deep",
    },
    { name: "uint64 2^53 + 1", type: "bcd.v1.Ack", bytes: [0x18, ...MAX_SAFE_PLUS_2], reason: "unsafe-integer" },
    {
      name: "int64 -(2^63)",
      type: "google.protobuf.Timestamp",
      bytes: [0x08, ...Array(9).fill(0x80), 0x01],
      reason: "unsafe-integer",
    },
    {
      name: "packed uint64 2^53 + 1",
      type: "bcd.v1.AccessSection",
      bytes: [0x22, 0x08, ...MAX_SAFE_PLUS_2],
      reason: "unsafe-integer",
    },
    {
      name: "packed uint32s past the end",
      type: "bcd.v1.GpuDiagnosis",
      bytes: [0x42, 0x03, 0x01, 0x02],
      reason: "truncated",
    },
    {
      name: "a packed varint across its run's end",
      type: "bcd.v1.GpuDiagnosis",
      bytes: [0x42, 0x01, 0x80],
      reason: "truncated",
    },
    {
      name: "a short string that is not UTF-8",
      type: "bcd.v1.Ack",
      bytes: [0x0a, 0x02, 0xc3, 0x28],
      reason: "invalid-utf8",
    },
    {
      name: "a long string that is not UTF-8",
      type: "bcd.v1.Ack",
      bytes: [0x0a, 0x50, ...Array(0x4e).fill(0x41), 0xc3, 0x28],
      reason: "invalid-utf8",
    },
    {
      name: "a lone surrogate in UTF-8",
      type: "bcd.v1.Ack",
      bytes: [0x0a, 0x03, 0xed, 0xa0, 0x80],
      reason: "invalid-utf8",
    },
    {
      name: "a map entry past its end",
      type: "bcd.v1.TelemetrySection",
      bytes: [0x1a, 0x04, 0x0a, 0x05, 0x61],
      reason: "truncated",
    },
  ];
  for (const row of rows) {
    await ctx.step(row.name, () => {
      const type = t(row.type);
      const [mine, ref] = pair(type);
      const bytes = new Uint8Array(row.bytes);
      const got = outcome(type, mine, bytes);
      assert.ok(got && typeof got === "object" && "error" in got, `decoded: ${JSON.stringify(got)}`);
      assert.deepEqual(got, outcome(type, ref, bytes));
      try {
        decodeMessage(mine as never, bytes);
        assert.fail("decodeMessage accepted it");
      } catch (e) {
        assert.ok(e instanceof WireDecodeError, String(e));
        assert.equal(e.reason, row.reason, e.message);
      }
    });
  }
});

Deno.test("mutated encodings of every message decode to the same value or fail with the same error on both", () => {
  const mutate = byteMutator(0x1b873593);
  let same = 0;
  for (const type of types) {
    const [mine, ref] = pair(type);
    for (const value of fillVariants(type)) {
      const valid = mine.encode(value).finish();
      for (let round = 0; round < 25; round++) {
        const input = mutate(valid);
        assert.deepEqual(outcome(type, mine, input), outcome(type, ref, input), `${type.fullName} ${input}`);
        same++;
      }
    }
  }
  assert.ok(same > 1000, `${same}`);
});

Deno.test("a lone surrogate is written as U+FFFD, where protobufjs wrote bytes no UTF-8 decoder accepts", () => {
  const [mine, ref] = pair(t("bcd.v1.Ack"));
  for (const s of ["\ud800", "a\udc00b", "x".repeat(200) + "\ud83d"]) {
    const bytes = mine.encode({ journal_id: s }).finish();
    const expected = s.replace(/[\ud800-\udfff]/g, "\ufffd");
    assert.equal((mine.decode(bytes) as { journal_id: string }).journal_id, expected);
    assert.deepEqual(bytes, ref.encode({ journal_id: expected }).finish());
    // protobufjs' bytes for the same string are the same length and refused by both decoders.
    const theirs = ref.encode({ journal_id: s }).finish();
    assert.equal(theirs.length, bytes.length);
    assert.throws(() => mine.decode(theirs), TypeError);
  }
});

Deno.test("a 64-bit field refuses a bigint rather than write 0 as protobufjs did", () => {
  const [mine] = pair(t("bcd.v1.Ack"));
  assert.throws(() => mine.encode({ event_seq: 5n }), TypeError);
  // Numbers, decimal strings and {low, high} halves are written as before.
  for (const v of [5, "5", { low: 5, high: 0 }]) {
    assert.deepEqual(mine.encode({ event_seq: v }).finish(), new Uint8Array([0x18, 0x05]));
  }
});

Deno.test("a reader refuses what is not bytes", () => {
  assert.throws(() => Reader.create("abc" as never), /illegal buffer/);
  assert.equal(Reader.create([8, 1]).uint32(), 8);
});

Deno.test("finish() returns bytes no later write changes, and leaves the writer empty", () => {
  // Small results share a slab and writers share a working buffer: fill both many times over and check the first.
  const first = Writer.create().uint32(8).uint32(1).string("first").finish();
  const kept = Array.from(first);
  const big = "x".repeat(5000);
  for (let i = 0; i < 3000; i++) {
    const w = Writer.create().uint32(10).string(i % 2 ? big : `m-${i}`);
    assert.equal(w.finish().length, i % 2 ? 5003 : 2 + `m-${i}`.length);
  }
  assert.deepEqual(Array.from(first), kept);
  // A writer whose encode threw (never finished) keeps its buffer; the next writer still works.
  const abandoned = Writer.create().uint32(8).fork();
  assert.deepEqual(Array.from(Writer.create().uint32(8).uint32(2).finish()), [8, 2]);
  assert.equal(abandoned.pos, 2);
  const w = Writer.create().uint32(8).uint32(3);
  assert.deepEqual(Array.from(w.finish()), [8, 3]);
  assert.deepEqual(Array.from(w.finish()), []);
  assert.deepEqual(Array.from(w.uint32(16).uint32(4).finish()), [16, 4]);
  assert.throws(() => Writer.create().ldelim(), /without fork/);
});

Deno.test("the runtime has every reader, writer and $util member the generated module uses", async () => {
  const code = await Deno.readTextFile(GEN);
  // Reader methods are called on `reader`; writer methods also in chains (`writer.uint32(10).string(...)`).
  const readerCalls = new Set([...code.matchAll(/\breader\.([A-Za-z_$][\w$]*)\(/g)].map((m) => m[1]!));
  const called = new Set([...code.matchAll(/\.([A-Za-z_$][\w$]*)\(/g)].map((m) => m[1]!));
  const missing: string[] = [];
  const classes = [
    ["Reader", Reader.prototype, reference.Reader.prototype, readerCalls],
    ["Writer", Writer.prototype, reference.Writer.prototype, called],
  ] as const;
  for (const [name, mineProto, refProto, calls] of classes) {
    for (const method of Object.getOwnPropertyNames(refProto)) {
      if (calls.has(method) && !(method in mineProto)) missing.push(`${name}#${method}`);
    }
  }
  for (const [, member] of code.matchAll(/\$util\.([A-Za-z_$][\w$]*)/g)) {
    if (!(member! in runtime.util)) missing.push(`$util.${member}`);
  }
  for (const [, obj, member] of code.matchAll(/\$(Reader|Writer|protobuf)\.([A-Za-z_$][\w$]*)/g)) {
    const target = obj === "Reader" ? Reader : obj === "Writer" ? Writer : runtime;
    if (!(member! in target)) missing.push(`$${obj}.${member}`);
  }
  assert.deepEqual(missing, []);
  // The check sees the calls: the generated code's reader and writer methods are found in it.
  for (const m of ["stringVerify", "skipType", "uint64s", "raw"]) assert.ok(readerCalls.has(m), m);
  for (const m of ["string", "fork", "ldelim", "uint32s"]) assert.ok(called.has(m), m);
});
