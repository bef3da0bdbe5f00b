import assert from "node:assert/strict";
import {
  allocationIdOfSlice,
  checkSliceRequest,
  MIN_SLICE_MEMORY_BYTES,
  PAGE_1GI,
  PAGE_2MI,
  type SliceHostLimits,
  sliceHostProblem,
  sliceName,
  sliceSettings,
} from "./slice.ts";

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

const HOST: SliceHostLimits = {
  cpus: 4,
  numaNodes: [0, 1],
  memTotalBytes: 64 * PAGE_1GI,
  hugetlb2MBBytes: 512 * PAGE_2MI,
  hugetlb1GBBytes: 2 * PAGE_1GI,
};

Deno.test("slice settings are bounded by the host's real limits, row by row, with the value and the limit", async (t) => {
  assert.equal(
    sliceHostProblem({
      allowedCpus: "0-3",
      allowedMemoryNodes: "0-1",
      cpuQuotaPercent: 400,
      memoryMaxBytes: PAGE_1GI,
      memoryHighBytes: PAGE_1GI,
      hugetlb2MBMaxBytes: 512 * PAGE_2MI,
      hugetlb1GBMaxBytes: 2 * PAGE_1GI,
    }, HOST),
    undefined,
    "the host's whole is allowed",
  );
  const rows: [string, Parameters<typeof sliceHostProblem>[0], RegExp][] = [
    [
      "a CPU the host lacks",
      { allowedCpus: "0-99999" },
      /allowedCpus 0-99999 names a CPU this host does not have \(it has 4/,
    ],
    ["a NUMA node the host lacks", { allowedMemoryNodes: "0,2" }, /NUMA node 2/],
    ["a far NUMA node, not expanded", { allowedMemoryNodes: "0-9999999" }, /NUMA node 9999999/],
    ["a zero CPU quota", { cpuQuotaPercent: 0 }, /between 1 and 400/],
    ["a quota past the CPUs", { cpuQuotaPercent: 2 ** 52 }, /between 1 and 400/],
    ["memory.max=1", { memoryMaxBytes: 1 }, new RegExp(`between ${MIN_SLICE_MEMORY_BYTES}`)],
    ["more memory than MemTotal", { memoryMaxBytes: 65 * PAGE_1GI }, /MemTotal/],
    ["high above max", { memoryMaxBytes: PAGE_1GI, memoryHighBytes: PAGE_1GI + 1 }, /above memoryMaxBytes/],
    ["high above MemTotal", { memoryHighBytes: 65 * PAGE_1GI }, /above MemTotal/],
    ["part of a 2 MiB page", { hugetlb2MBMaxBytes: PAGE_2MI + 1 }, /whole number/],
    ["more 1 GiB pages than the pool", { hugetlb1GBMaxBytes: 3 * PAGE_1GI }, /above the host's pool/],
  ];
  for (const [why, s, re] of rows) {
    await t.step(why, () => assert.match(sliceHostProblem(s, HOST) ?? "(accepted)", re));
  }
});
