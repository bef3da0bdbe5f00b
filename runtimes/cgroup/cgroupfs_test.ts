import assert from "node:assert/strict";
import { sliceName, type SliceSettings, sliceSettings } from "../../core/converge/devices/slice.ts";
import { CgroupError, sliceDir } from "./cgroup_files.ts";
import { CgroupfsSliceManager, sliceFiles } from "./cgroupfs.ts";
import { fakeCgroupfsSubject, fakeCgroupRoot } from "./trees_testing.ts";

const GiB = 2 ** 30;

// One row per row of the seed's slice table: the limits, the cgroupfs files they become, and the controller.
const ROWS: {
  row: string;
  limits: Parameters<typeof sliceSettings>[0];
  files: Record<string, string>;
  controllers: string[];
}[] = [
  {
    row: "AllowedCPUs, AllowedMemoryNodes",
    limits: { cpus: "0-3,8", mems: "0-1" },
    files: { "cpuset.cpus": "0-3,8", "cpuset.mems": "0-1" },
    controllers: ["cpuset"],
  },
  { row: "CPUQuota", limits: { cpu_millis: 1500 }, files: { "cpu.max": "150000 100000" }, controllers: ["cpu"] },
  {
    row: "MemoryMax, and MemoryHigh at 90%",
    limits: { memory_bytes: 10 * GiB },
    files: { "memory.max": `${10 * GiB}`, "memory.high": `${9 * GiB}` },
    controllers: ["memory"],
  },
  {
    row: "hugetlb.2MB.max, hugetlb.1GB.max",
    limits: { hugepages_2mi: 4, hugepages_1gi: 2 },
    files: { "hugetlb.2MB.max": `${4 * 2 ** 21}`, "hugetlb.1GB.max": `${2 * GiB}` },
    controllers: ["hugetlb"],
  },
];

Deno.test("cgroupfs: each row of the slice table becomes its file, read back, with its controller enabled on the ancestors", async (t) => {
  for (const r of ROWS) {
    await t.step(r.row, async () => {
      const s = await fakeCgroupfsSubject();
      try {
        const name = sliceName("t1");
        await s.mgr.apply(name, sliceSettings(r.limits));
        for (const [f, v] of Object.entries(r.files)) {
          assert.equal((await Deno.readTextFile(`${sliceDir(s.root, name)}/${f}`)).trim(), v, f);
        }
        assert.deepEqual(sliceFiles(sliceSettings(r.limits)).map((f) => f.file).sort(), Object.keys(r.files).sort());
        for (const d of [s.root, `${s.root}/bcd.slice`, `${s.root}/bcd.slice/bcd-alloc.slice`]) {
          const sc = await Deno.readTextFile(`${d}/cgroup.subtree_control`);
          for (const c of r.controllers) assert.match(sc, new RegExp(`\\+?${c}`), `${d} enables ${c}`);
        }
      } finally {
        await s.cleanup();
      }
    });
  }
});

Deno.test("cgroupfs: a controller the mount does not offer is an error naming it", async () => {
  const root = await fakeCgroupRoot();
  try {
    await Deno.writeTextFile(`${root}/cgroup.controllers`, "hugetlb");
    const mgr = new CgroupfsSliceManager({ root });
    await assert.rejects(
      mgr.apply(sliceName("m"), { memoryMaxBytes: GiB } as SliceSettings),
      (e) => e instanceof CgroupError && /controller memory is not available/.test(e.message),
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("cgroupfs: a write the kernel refuses is an error naming the file and value", async () => {
  const s = await fakeCgroupfsSubject();
  try {
    const name = sliceName("w");
    await Deno.mkdir(`${sliceDir(s.root, name)}/cpu.max`, { recursive: true }); // cannot be written
    await assert.rejects(
      s.mgr.apply(name, { cpuQuotaPercent: 100 }),
      (e) => e instanceof CgroupError && /cpu\.max/.test(e.message) && /100000 100000/.test(e.message),
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("cgroupfs: a slice's empty child cgroups go with it", async () => {
  const s = await fakeCgroupfsSubject();
  try {
    const name = sliceName("c");
    await s.mgr.apply(name, { cpuQuotaPercent: 50 });
    await s.afterCreate(name);
    await Deno.mkdir(`${sliceDir(s.root, name)}/cri-containerd-1.scope`);
    assert.equal(await s.mgr.remove(name), "removed");
    assert.deepEqual(await s.mgr.list(), []);
  } finally {
    await s.cleanup();
  }
});
