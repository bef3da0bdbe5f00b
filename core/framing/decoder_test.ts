import assert from "node:assert/strict";
import { Decoder, type Frame } from "./decoder.ts";
import { encodeFrame } from "./encoder.ts";
import { FramingError } from "./errors.ts";
import { HEADER_BYTES, Kind, KINDS, type KindSpec, kindSpec } from "./frame_kinds.ts";

/** A sample body of each kind: the largest its limit allows, but capped to keep the split tests quick. */
function sampleBody(k: KindSpec, cap = 40): Uint8Array {
  const n = Math.min(k.limit, cap);
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + k.kind) & 0xff);
}

function decoderFor(k: KindSpec): Decoder {
  return new Decoder({ from: k.sender === "guest" ? "guest" : "host" });
}

function collect(d: Decoder, chunks: Uint8Array[]): { kind: number; body: number[] }[] {
  const out: { kind: number; body: number[] }[] = [];
  for (const c of chunks) d.push(c, (f: Frame) => out.push({ kind: f.kind, body: [...f.body] }));
  return out;
}

Deno.test("the kinds table has one row per seed kind 1–26, the config-install kinds 32–35 and the channel gate's 37–41", () => {
  assert.deepEqual(KINDS.map((k) => k.kind), [
    ...Array.from({ length: 26 }, (_, i) => i + 1),
    32,
    33,
    34,
    35,
    37,
    38,
    39,
    40,
    41,
  ]);
  assert.deepEqual(
    ["AuthChallenge", "AuthProof", "Attach", "Attached", "AttachRefused"].map(limitsOf),
    [48, 32, 16, 48, 16],
  );
  assert.equal(kindSpec(36), undefined, "36, the retired AuthHello, is unassigned");
  const limits = Object.fromEntries(KINDS.map((k) => [k.name, k.limit]));
  assert.equal(limits.Echo, 256 * 1024);
  assert.equal(limits.RootConfig, 4096);
  assert.equal(limits.ExecStart, 256 * 1024);
  assert.equal(limits.ExecCancel, 64);
  assert.equal(limits.Maps, 256 * 1024);
  assert.equal(limits.Mapped, 0);
  assert.equal(limits.AgentConfigChunk, 512 * 1024);
});

function limitsOf(name: string): number | undefined {
  return KINDS.find((k) => k.name === name)?.limit;
}

Deno.test("every kind round-trips, split at every byte", async (t) => {
  for (const k of KINDS) {
    await t.step(k.name, () => {
      const body = sampleBody(k);
      const frame = encodeFrame(k.kind, body);
      assert.equal(frame.length, HEADER_BYTES + body.length);
      for (let cut = 0; cut <= frame.length; cut++) {
        const d = decoderFor(k);
        const got = collect(d, [frame.subarray(0, cut), frame.subarray(cut)]);
        assert.deepEqual(got, [{ kind: k.kind, body: [...body] }], `cut at ${cut}`);
        assert.equal(d.partial, false);
      }
    });
  }
});

Deno.test("a stream of every kind decodes in pieces of every size", () => {
  const hostKinds = KINDS.filter((k) => k.sender !== "guest");
  const frames = hostKinds.map((k) => encodeFrame(k.kind, sampleBody(k, 300)));
  const stream = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let o = 0;
  for (const f of frames) stream.set(f, (o += f.length) - f.length);
  const want = hostKinds.map((k) => ({ kind: k.kind, body: [...sampleBody(k, 300)] }));
  for (let size = 1; size <= stream.length; size += size < 64 ? 1 : 97) {
    const d = new Decoder({ from: "host" });
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < stream.length; i += size) chunks.push(stream.subarray(i, i + size));
    assert.deepEqual(collect(d, chunks), want, `pieces of ${size}`);
  }
});

Deno.test("a record that ends a message and starts the next yields the first and holds the second", () => {
  const a = encodeFrame(Kind.Echo, new Uint8Array([1, 2, 3]));
  const b = encodeFrame(Kind.Echo, new Uint8Array([4, 5, 6, 7]));
  const d = new Decoder({ from: "host" });
  const joined = new Uint8Array([...a, ...b.subarray(0, 7)]);
  assert.deepEqual(collect(d, [joined]), [{ kind: Kind.Echo, body: [1, 2, 3] }]);
  assert.equal(d.partial, true);
  assert.equal(d.partialBytes, 7);
  assert.deepEqual(collect(d, [b.subarray(7)]), [{ kind: Kind.Echo, body: [4, 5, 6, 7] }]);
});

Deno.test("bodies are views: of the chunk when whole in it, of the reused buffer when reassembled", () => {
  const d = new Decoder({ from: "host" });
  const f = encodeFrame(Kind.Echo, new Uint8Array(100).fill(9));
  let view: Uint8Array | undefined;
  d.push(f, (fr) => view = fr.body);
  assert.equal(view!.buffer, f.buffer);
  d.push(f.subarray(0, 50), () => assert.fail("partial"));
  d.push(f.subarray(50), (fr) => view = fr.body);
  const first = view!.buffer;
  assert.notEqual(first, f.buffer);
  d.push(f.subarray(0, 50), () => assert.fail("partial"));
  d.push(f.subarray(50), (fr) => view = fr.body);
  assert.equal(view!.buffer, first, "the reassembly buffer is reused");
  assert.equal(d.bufferCapacity, 4096);
});

/** Headers the framing refuses, each before any byte of its body. */
const REFUSED_HEADERS: { name: string; from: "host" | "guest"; len: number; kind: number; reason: string }[] = [
  { name: "unassigned kind 0", from: "host", len: 0, kind: 0, reason: "unknown-kind" },
  { name: "unassigned kind 27", from: "host", len: 0, kind: 27, reason: "unknown-kind" },
  { name: "unassigned kind 31", from: "host", len: 0, kind: 31, reason: "unknown-kind" },
  { name: "unassigned kind 42", from: "host", len: 0, kind: 42, reason: "unknown-kind" },
  { name: "unassigned kind 255", from: "host", len: 1, kind: 255, reason: "unknown-kind" },
  { name: "Echo beyond 256 KiB", from: "host", len: 256 * 1024 + 1, kind: Kind.Echo, reason: "oversized" },
  { name: "length 0xffffffff", from: "host", len: 0xffffffff, kind: Kind.Echo, reason: "oversized" },
  { name: "Ping with a body", from: "host", len: 1, kind: Kind.Ping, reason: "oversized" },
  { name: "RootConfig beyond 4 KiB", from: "host", len: 4097, kind: Kind.RootConfig, reason: "oversized" },
  { name: "ExecCancel beyond 64 bytes", from: "host", len: 65, kind: Kind.ExecCancel, reason: "oversized" },
  { name: "config chunk beyond 512 KiB", from: "host", len: 512 * 1024 + 1, kind: 33, reason: "oversized" },
  { name: "a guest-only kind to the guest", from: "host", len: 0, kind: Kind.Pong, reason: "wrong-direction" },
  { name: "Report to the guest", from: "host", len: 3, kind: Kind.Report, reason: "wrong-direction" },
  { name: "a host-only kind to the host", from: "guest", len: 0, kind: Kind.Stop, reason: "wrong-direction" },
  { name: "ExecStart to the host", from: "guest", len: 40, kind: Kind.ExecStart, reason: "wrong-direction" },
];

Deno.test("headers are refused before their body arrives", async (t) => {
  for (const row of REFUSED_HEADERS) {
    await t.step(row.name, () => {
      const h = new Uint8Array(5);
      new DataView(h.buffer).setUint32(0, row.len, true);
      h[4] = row.kind;
      for (let cut = 0; cut < 5; cut++) {
        const d = new Decoder({ from: row.from });
        d.push(h.subarray(0, cut), () => assert.fail("no frame"));
        assert.throws(() => d.push(h.subarray(cut), () => assert.fail("no frame")), (e: unknown) => {
          assert.ok(e instanceof FramingError);
          assert.equal(e.reason, row.reason);
          assert.equal(e.kind, row.kind);
          return true;
        });
        assert.equal(d.bufferCapacity, 0, "nothing was allocated for the body");
        assert.throws(() => d.push(new Uint8Array(1), () => {}), FramingError, "the stream stays ended");
      }
    });
  }
});

Deno.test("a stream that ends inside a message is truncated; one at a boundary is clean", () => {
  const f = encodeFrame(Kind.Echo, new Uint8Array(10));
  const d = new Decoder({ from: "host" });
  d.push(f, () => {});
  d.finish();
  d.push(f.subarray(0, 3), () => {});
  assert.throws(() => d.finish(), (e: unknown) => e instanceof FramingError && e.reason === "truncated");
});

Deno.test("reset drops the partial message and the next epoch starts with a new message", () => {
  const f = encodeFrame(Kind.Echo, new Uint8Array([1, 2, 3, 4]));
  const d = new Decoder({ from: "host" });
  d.push(f.subarray(0, 7), () => assert.fail("partial"));
  assert.equal(d.reset(), 7);
  assert.equal(d.partial, false);
  assert.deepEqual(collect(d, [f]), [{ kind: Kind.Echo, body: [1, 2, 3, 4] }]);
});

Deno.test("pushRaw hands out the same messages without views", () => {
  const f = encodeFrame(Kind.Echo, new Uint8Array([7, 8]));
  const two = new Uint8Array([...f, ...f]);
  const d = new Decoder({ from: "host" });
  const got: number[][] = [];
  d.pushRaw(two.subarray(0, 9), (k, b, s, e) => got.push([k, ...b.subarray(s, e)]));
  d.pushRaw(two.subarray(9), (k, b, s, e) => got.push([k, ...b.subarray(s, e)]));
  assert.deepEqual(got, [[Kind.Echo, 7, 8], [Kind.Echo, 7, 8]]);
});

Deno.test("encodeFrame refuses an unassigned kind and a body beyond its limit", () => {
  assert.throws(() => encodeFrame(30), (e: unknown) => e instanceof FramingError && e.reason === "unknown-kind");
  assert.throws(
    () => encodeFrame(Kind.Echo, new Uint8Array(256 * 1024 + 1)),
    (e: unknown) => e instanceof FramingError && e.reason === "oversized",
  );
  assert.equal(encodeFrame(Kind.Echo, new Uint8Array(256 * 1024)).length, 256 * 1024 + 5);
});
