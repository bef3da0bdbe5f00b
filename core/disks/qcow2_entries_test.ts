import assert from "node:assert/strict";
import { decodeL1Entry, decodeL2Entry } from "./qcow2_entries.ts";
import { Qcow2ConvertError } from "./qcow2_errors.ts";

const malformed = (e: unknown) => e instanceof Qcow2ConvertError && e.reason === "malformed";

Deno.test("decodeL1Entry: an L2 table's offset, none, or malformed (qcow2.txt's L1 entry, bit by bit)", async (t) => {
  const rows: [string, bigint, number | null | "malformed"][] = [
    ["unallocated", 0n, null],
    ["an L2 table, copied flag set", (1n << 63n) | 0x30000n, 0x30000],
    ["reserved bit 0", 0x30001n, "malformed"],
    ["reserved bit 56", (1n << 56n) | 0x30000n, "malformed"],
    ["an offset not on a 64 KiB cluster", 0x30200n, "malformed"],
  ];
  for (const [name, e, want] of rows) {
    await t.step(name, () => {
      if (want === "malformed") assert.throws(() => decodeL1Entry(e, 16, 0), malformed);
      else assert.equal(decodeL1Entry(e, 16, 0), want);
    });
  }
});

Deno.test("decodeL2Entry: data, zero, compressed, or malformed (qcow2.txt's cluster descriptors)", async (t) => {
  const x = 62n - BigInt(16 - 8); // compressed descriptor split at 64 KiB clusters
  const rows: [string, bigint, 2 | 3, unknown][] = [
    ["unallocated", 0n, 3, { kind: "zero" }],
    ["the all-zeros flag (v3) over a preallocated cluster", 0x50000n | 1n, 3, { kind: "zero" }],
    ["bit 0 in a version 2 image is reserved", 0x50000n | 1n, 2, "malformed"],
    ["an allocated cluster, copied flag set", (1n << 63n) | 0x50000n, 3, { kind: "data", offset: 0x50000 }],
    ["reserved bit 1", 0x50002n, 3, "malformed"],
    ["reserved bit 61", (1n << 61n) | 0x50000n, 3, "malformed"],
    ["a data offset not on a cluster", 0x50200n, 3, "malformed"],
    [
      "compressed: two more sectors after the one holding offset 0x12345",
      (1n << 62n) | (2n << x) | 0x12345n,
      3,
      { kind: "compressed", offset: 0x12345, size: 3 * 512 - 0x145 },
    ],
  ];
  for (const [name, e, version, want] of rows) {
    await t.step(name, () => {
      if (want === "malformed") assert.throws(() => decodeL2Entry(e, version, 16, 7), malformed);
      else assert.deepEqual(decodeL2Entry(e, version, 16, 7), want);
    });
  }
});
