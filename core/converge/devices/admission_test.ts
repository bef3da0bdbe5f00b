import assert from "node:assert/strict";
import {
  admitHold,
  boundHoldsCommittedBytes,
  HOST_HEADROOM_BYTES,
  type HostMemory,
  missingHugePageSize,
  needsAdmission,
  parseMeminfo,
} from "./admission.ts";

const GiB = 2 ** 30;

Deno.test("parseMeminfo reads MemTotal and the huge page pool", () => {
  const m = parseMeminfo(
    "MemTotal:       65536000 kB\nMemFree: 1 kB\nHugePages_Total:       4\nHugepagesize:    2048 kB\nHugetlb:         8192 kB\n",
  );
  assert.deepEqual(m, { memTotalBytes: 65536000 * 1024, hugetlbBytes: 8192 * 1024 });
  assert.deepEqual(
    parseMeminfo("MemTotal: 100 kB\nHugePages_Total: 2\nHugepagesize: 2048 kB\n").hugetlbBytes,
    4096 * 1024,
  );
  assert.throws(() => parseMeminfo("MemFree: 1 kB\n"), RangeError);
});

const host: HostMemory = {
  memTotalBytes: 64 * GiB,
  hugetlbBytes: 8 * GiB,
  pages1Gi: { free: 8, reserved: 0, freeByNode: { 0: 6, 1: 2 } },
  pages2Mi: { free: 100, reserved: 10 },
};

Deno.test("only holds with a memory limit or huge pages need admission", () => {
  assert.equal(needsAdmission(undefined), false);
  assert.equal(needsAdmission({ cpu_millis: 1000, cpus: "0-3" }), false);
  assert.equal(needsAdmission({ memory_bytes: 1 }), true);
  assert.equal(needsAdmission({ hugepages_1gi: 1 }), true);
});

Deno.test("normal memory: MemTotal less the pool and 1 GiB headroom, less bound holds and domains", () => {
  const room = 64 * GiB - 8 * GiB - HOST_HEADROOM_BYTES; // 55 GiB
  assert.equal(admitHold({ memory_bytes: room }, host, []).ok, true);
  assert.equal(admitHold({ memory_bytes: room + 1 }, host, []).ok, false);
  const bound = [{ allocationId: "b", limits: { memory_bytes: 40 * GiB } }];
  assert.equal(admitHold({ memory_bytes: 15 * GiB }, host, bound).ok, true);
  const r = admitHold({ memory_bytes: 15 * GiB }, host, bound, 1 * GiB);
  assert.equal(r.ok, false);
  assert.match((r as { message: string }).message, /15360 MiB of memory needed, 14336 MiB left on this host/);
});

Deno.test("huge pages: free less reserved, less what bound holds booked and have not faulted in", () => {
  assert.equal(admitHold({ hugepages_2mi: 90 }, host, []).ok, true);
  assert.equal(admitHold({ hugepages_2mi: 91 }, host, []).ok, false, "10 of 100 are reserved");
  const bound = [{ allocationId: "b", limits: { hugepages_2mi: 50 }, faulted2MBBytes: 20 * 2 * 2 ** 20 }];
  assert.equal(admitHold({ hugepages_2mi: 60 }, host, bound).ok, true, "30 outstanding of bound");
  assert.equal(admitHold({ hugepages_2mi: 61 }, host, bound).ok, false);
});

Deno.test("huge pages on the hold's NUMA nodes", () => {
  assert.equal(admitHold({ hugepages_1gi: 6, mems: "0" }, host, []).ok, true);
  const r = admitHold({ hugepages_1gi: 3, mems: "1" }, host, []);
  assert.equal(r.ok, false);
  assert.match((r as { message: string }).message, /on NUMA nodes 1/);
  const other = [{ allocationId: "b", limits: { hugepages_1gi: 2, mems: "1" } }];
  assert.equal(
    admitHold({ hugepages_1gi: 5, mems: "0" }, host, other).ok,
    true,
    "node 1's taker does not count on node 0",
  );
  assert.equal(admitHold({ hugepages_1gi: 7, mems: "0" }, host, other).ok, false, "host-wide still counts");
});

Deno.test("a host without a pool of the asked size refuses huge pages", () => {
  assert.equal(admitHold({ hugepages_1gi: 1 }, { memTotalBytes: 64 * GiB, hugetlbBytes: 0 }, []).ok, false);
});

Deno.test("boundHoldsCommittedBytes counts the memory of wanted holds that are bound, for VM starts", () => {
  const desired = {
    assignments: [
      {
        allocation_id: "a",
        reservation_id: "",
        binding: "BINDING_HOLD",
        devices: [],
        limits: { memory_bytes: 4 * GiB },
      },
      {
        allocation_id: "k",
        reservation_id: "",
        binding: "BINDING_KUBERNETES",
        devices: [],
        limits: { memory_bytes: 2 * GiB },
      },
      {
        allocation_id: "n",
        reservation_id: "",
        binding: "BINDING_HOLD",
        devices: [],
        limits: { memory_bytes: 8 * GiB },
      },
      {
        allocation_id: "a",
        reservation_id: "",
        binding: "BINDING_HOLD",
        devices: [],
        limits: { memory_bytes: 99 * GiB },
      },
    ],
  };
  assert.equal(boundHoldsCommittedBytes(desired, ["a", "k", "gone"]), 6 * GiB);
  assert.equal(boundHoldsCommittedBytes(undefined, ["a"]), 0);
});

Deno.test("missingHugePageSize names a booked page size the host does not have; unknown sizes refuse nothing", () => {
  const only2M = { memTotalBytes: 64 * GiB, hugetlbBytes: 0, hugePageSizes: [2 * 2 ** 20] };
  assert.equal(missingHugePageSize({ hugepages_2mi: 4 }, only2M), undefined);
  assert.equal(
    missingHugePageSize({ hugepages_2mi: 4, hugepages_1gi: 1 }, only2M),
    "this host has no 1 GiB huge pages (it has 2 MiB); the hold books 1 of them",
  );
  assert.equal(
    missingHugePageSize({ hugepages_2mi: 4 }, { ...only2M, hugePageSizes: [] }),
    "this host has no 2 MiB huge pages (it has none); the hold books 4 of them",
  );
  assert.equal(missingHugePageSize({ hugepages_1gi: 1 }, { memTotalBytes: 1, hugetlbBytes: 0 }), undefined);
  assert.equal(missingHugePageSize(undefined, only2M), undefined);
  assert.equal(missingHugePageSize({ memory_bytes: GiB }, { ...only2M, hugePageSizes: [] }), undefined);
});
