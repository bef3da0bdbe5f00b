import assert from "node:assert/strict";
import { BodyError } from "./errors.ts";
import { decodeMapFailure, decodeMaps, encodeMapFailure, encodeMaps, type Mapping } from "./maps.ts";
import { MAX_DATA_BODY } from "./frame_kinds.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const m = (src: string, tgt: string, readOnly = false): Mapping => ({ readOnly, source: enc(src), target: enc(tgt) });

Deno.test("a table round-trips in one part, with the MAPS layout", () => {
  const table = [m("dir", "/srv/maps/dir", true), m("dir/inner", "/srv/maps/dir/inner")];
  const parts = encodeMaps(table);
  assert.equal(parts.length, 1);
  const v = new DataView(parts[0]!.buffer);
  assert.deepEqual([v.getUint32(0, true), v.getUint32(4, true), v.getUint16(8, true), v.getUint16(10, true)], [
    0,
    2,
    1,
    3,
  ]);
  const part = decodeMaps(parts[0]!);
  assert.equal(part.first, 0);
  assert.deepEqual(
    part.mappings.map((x) => [x.readOnly, [...x.source], [...x.target]]),
    table.map((x) => [x.readOnly, [...x.source], [...x.target]]),
  );
});

Deno.test("an empty table has no part; a large one splits into parts of at most 256 KiB", () => {
  assert.deepEqual(encodeMaps([]), []);
  const long = "x".repeat(200);
  const table = Array.from({ length: 4096 }, (_, i) => m(`${long}${i}`, `/t/${long}${i}`));
  const parts = encodeMaps(table);
  assert.ok(parts.length > 1);
  let next = 0;
  for (const p of parts) {
    assert.ok(p.length <= MAX_DATA_BODY);
    const d = decodeMaps(p);
    assert.equal(d.first, next);
    next += d.mappings.length;
  }
  assert.equal(next, 4096);
  assert.throws(() => encodeMaps([...table, m("a", "/a")]), BodyError);
});

Deno.test("parts that do not decode", async (t) => {
  const good = encodeMaps([m("a", "/a")])[0]!;
  const set = (f: (v: DataView) => void) => {
    const b = good.slice();
    f(new DataView(b.buffer));
    return b;
  };
  const rows: [string, Uint8Array][] = [
    ["a part without a mapping", Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0)],
    ["a part past 4,096 mappings", set((v) => v.setUint32(0, 4096, true))],
    ["flags 2", set((v) => v.setUint16(8, 2, true))],
    ["a source past the end", set((v) => v.setUint16(10, 100, true))],
    ["trailing bytes", Uint8Array.of(...good, 0)],
    ["an absolute source", encodeRaw("/a", "/a")],
    ["a relative target", encodeRaw("a", "a")],
    ["a .. source", encodeRaw("../a", "/a")],
    ["a target of /", encodeRaw("a", "/")],
    ["a NUL in a target", encodeRaw("a", "/a\0b")],
    ["an empty source", encodeRaw("", "/a")],
    ["a count beyond the bytes", set((v) => v.setUint32(4, 1000, true))],
  ];
  for (const [name, body] of rows) await t.step(name, () => assert.throws(() => decodeMaps(body), BodyError));
});

function encodeRaw(src: string, tgt: string): Uint8Array {
  const s = enc(src);
  const t = enc(tgt);
  const b = new Uint8Array(14 + s.length + t.length);
  const v = new DataView(b.buffer);
  v.setUint32(4, 1, true);
  v.setUint16(10, s.length, true);
  v.setUint16(12, t.length, true);
  b.set(s, 14);
  b.set(t, 14 + s.length);
  return b;
}

Deno.test("MapFailed: the count applied, then the problem", () => {
  const b = encodeMapFailure({ applied: 3, problem: "target is reserved" });
  assert.deepEqual(decodeMapFailure(b), { applied: 3, problem: "target is reserved" });
  assert.throws(() => decodeMapFailure(Uint8Array.of(1, 0)), BodyError);
  assert.throws(() => decodeMapFailure(Uint8Array.of(1, 0, 0, 0, 0xff)), BodyError);
});
