import assert from "node:assert/strict";
import { headerBlock, paxRecord } from "./_tar_gen.ts";
import { UnsafeBundle } from "./errors.ts";
import { decodeHeader, parseNumeric, parsePax } from "./tar_header.ts";

const enc = new TextEncoder();
const field = (s: string | number[]) => typeof s === "string" ? enc.encode(s) : Uint8Array.from(s);

Deno.test("parseNumeric() reads octal with spaces and NULs, GNU base-256, and refuses garbage", async (t) => {
  const ok: Array<[string, string | number[], number]> = [
    ["zero-padded octal", "00000000017\0", 15],
    ["leading spaces", "     17 \0\0\0\0", 15],
    ["empty", "\0\0\0\0\0\0\0\0\0\0\0\0", 0],
    ["largest 11-digit octal", "77777777777\0", 8 ** 11 - 1],
    ["base-256", [0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0], 256],
    ["base-256 past 2^53", [0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], -1],
  ];
  for (const [what, f, want] of ok) {
    await t.step(what, () => assert.equal(parseNumeric(field(f), 0, 12, "size"), want));
  }
  for (
    const [what, f] of [["a non-octal digit", "00000000018\0"], ["garbage after", "17\0x"], ["negative base-256", [
      0xff,
      0xff,
    ]]] as const
  ) {
    await t.step(`refuses ${what}`, () => {
      assert.throws(
        () => parseNumeric(field(f as string | number[]), 0, 12, "size"),
        (e) => e instanceof UnsafeBundle && e.reason === "bad-header",
      );
    });
  }
});

Deno.test("decodeHeader() verifies the checksum (unsigned or signed) and maps a NUL typeflag to regular", () => {
  const h = headerBlock({ name: "a", type: "\0" }, 0);
  assert.equal(decodeHeader(h).typeflag, "0");
  const bad = headerBlock({ name: "a", checksumDelta: 1 }, 0);
  assert.throws(() => decodeHeader(bad), (e) => e instanceof UnsafeBundle && e.reason === "bad-checksum");
  // A name byte ≥ 0x80: an old tar's signed sum is accepted too.
  const hi = headerBlock({ name: "a", patch: { 1: 0xc3, 2: 0xa9 } }, 0);
  let signed = 0;
  for (let i = 0; i < 512; i++) signed += i >= 148 && i < 156 ? 0x20 : (hi[i]! > 127 ? hi[i]! - 256 : hi[i]!);
  hi.set(enc.encode(signed.toString(8).padStart(6, "0") + "\0 "), 148);
  assert.equal(new TextDecoder().decode(decodeHeader(hi).name), "aé");
});

Deno.test("parsePax() reads records and refuses lengths that lie", () => {
  const m = parsePax(enc.encode(paxRecord("path", "a/b") + paxRecord("size", "12") + paxRecord("x", "=y")));
  assert.deepEqual([...m], [["path", "a/b"], ["size", "12"], ["x", "=y"]]);
  for (const bad of ["5 path=a/b\n", "99 path=a\n", "x path=a\n", "8 =abc\n", "9 path=ab"]) {
    assert.throws(() => parsePax(enc.encode(bad)), (e) => e instanceof UnsafeBundle && e.reason === "bad-header", bad);
  }
});
