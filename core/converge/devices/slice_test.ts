import assert from "node:assert/strict";
import { allocationIdOfSlice, checkSliceRequest, PAGE_1GI, PAGE_2MI, sliceName, sliceSettings } from "./slice.ts";

// One row per row of the seed's slice table.
const ROWS = [
  {
    row: "AllowedCPUs, AllowedMemoryNodes from cpus, mems",
    limits: { cpus: "0-7,16", mems: "0" },
    want: { allowedCpus: "0-7,16", allowedMemoryNodes: "0" },
  },
  {
    row: "CPUQuota from cpu_millis as whole percents of one CPU",
    limits: { cpu_millis: 4000 },
    want: { cpuQuotaPercent: 400 },
  },
  { row: "CPUQuota rounds a partial percent up", limits: { cpu_millis: 1505 }, want: { cpuQuotaPercent: 151 } },
  {
    row: "MemoryMax, and MemoryHigh at 90% of it, from memory_bytes",
    limits: { memory_bytes: 10 * 2 ** 30 },
    want: { memoryMaxBytes: 10 * 2 ** 30, memoryHighBytes: 9 * 2 ** 30 },
  },
  {
    row: "MemoryHigh rounds down to whole bytes",
    limits: { memory_bytes: 1001 },
    want: { memoryMaxBytes: 1001, memoryHighBytes: 900 },
  },
  {
    row: "hugetlb.2MB.max, hugetlb.1GB.max from hugepages_2mi, hugepages_1gi",
    limits: { hugepages_2mi: 3, hugepages_1gi: 2 },
    want: { hugetlb2MBMaxBytes: 3 * PAGE_2MI, hugetlb1GBMaxBytes: 2 * PAGE_1GI },
  },
  { row: "nothing booked sets nothing", limits: {}, want: {} },
];

Deno.test("slice settings follow the seed's table row by row", async (t) => {
  for (const r of ROWS) {
    await t.step(r.row, () => assert.deepEqual(sliceSettings(r.limits), r.want));
  }
});

Deno.test("the slice is bcd-alloc-<allocation id>.slice, and a dash in the id is escaped the way systemd does", () => {
  assert.equal(sliceName("abc123"), "bcd-alloc-abc123.slice");
  assert.equal(sliceName("a-b"), "bcd-alloc-a\\x2db.slice");
  for (const id of ["abc123", "a-b", "x.y_z", "0f8e-11ee-9"]) assert.equal(allocationIdOfSlice(sliceName(id)), id);
  for (const other of ["bcd-alloc.slice", "bcd.slice", "user-1000.slice", "bcd-alloc-a-b.slice", "bcd-alloc-.slice"]) {
    assert.equal(allocationIdOfSlice(other), undefined, other);
  }
});

Deno.test("checkSliceRequest accepts only a hold slice name, cpulists and counts (the helper's slice.apply)", () => {
  const ok = checkSliceRequest("bcd-alloc-a1.slice", {
    allowedCpus: "0-3",
    cpuQuotaPercent: 200,
    memoryMaxBytes: 2 ** 30,
  });
  assert.deepEqual(ok.settings, { allowedCpus: "0-3", cpuQuotaPercent: 200, memoryMaxBytes: 2 ** 30 });
  const bad: [unknown, unknown][] = [
    ["system.slice", {}],
    ["../bcd-alloc-a.slice", {}],
    ["bcd-alloc-a.slice", { allowedCpus: "0-3; rm -rf /" }],
    ["bcd-alloc-a.slice", { allowedCpus: "3-1" }],
    ["bcd-alloc-a.slice", { memoryMaxBytes: -1 }],
    ["bcd-alloc-a.slice", { memoryMaxBytes: 1.5 }],
    ["bcd-alloc-a.slice", { Delegate: "yes" }],
    ["bcd-alloc-a.slice", null],
  ];
  for (const [n, st] of bad) assert.throws(() => checkSliceRequest(n, st), RangeError, JSON.stringify([n, st]));
});
