import assert from "node:assert/strict";
import { sliceName, sliceSettings } from "../../core/converge/devices/slice.ts";
import { CgroupError, sliceDir } from "./cgroup_files.ts";
import { sliceProperties } from "./systemd.ts";
import { fakeSystemdSubject } from "./trees_testing.ts";

const GiB = 2 ** 30;

// One row per row of the seed's slice table that systemd has a property for.
const ROWS: { row: string; limits: Parameters<typeof sliceSettings>[0]; props: string[] }[] = [
  {
    row: "AllowedCPUs, AllowedMemoryNodes",
    limits: { cpus: "0-7", mems: "1" },
    props: ["AllowedCPUs=0-7", "AllowedMemoryNodes=1"],
  },
  { row: "CPUQuota", limits: { cpu_millis: 2500 }, props: ["CPUQuota=250%"] },
  {
    row: "MemoryMax, and MemoryHigh at 90%",
    limits: { memory_bytes: 10 * GiB },
    props: [`MemoryMax=${10 * GiB}`, `MemoryHigh=${9 * GiB}`],
  },
  { row: "hugetlb: no systemd property", limits: { hugepages_1gi: 1 }, props: [] },
];

const lines = async (log: string) => (await Deno.readTextFile(log).catch(() => "")).split("\n").filter(Boolean);

Deno.test("systemd: set-property --runtime carries each row of the slice table, then start", async (t) => {
  for (const r of ROWS) {
    await t.step(r.row, async () => {
      const s = await fakeSystemdSubject();
      try {
        const name = sliceName("s1");
        assert.deepEqual(sliceProperties(sliceSettings(r.limits)), r.props);
        await s.mgr.apply(name, sliceSettings(r.limits));
        const want = r.props.length
          ? [`set-property --runtime ${name} ${r.props.join(" ")}`, `start ${name}`]
          : [`start ${name}`];
        assert.deepEqual(await lines(s.log), want);
      } finally {
        await s.cleanup();
      }
    });
  }
});

Deno.test("systemd: huge pages go to cgroupfs, with hugetlb enabled on the slice's ancestors", async () => {
  const s = await fakeSystemdSubject();
  try {
    const name = sliceName("h");
    await s.mgr.apply(name, sliceSettings({ hugepages_2mi: 8, hugepages_1gi: 1, memory_bytes: GiB }));
    const dir = sliceDir(s.root, name);
    assert.equal((await Deno.readTextFile(`${dir}/hugetlb.2MB.max`)).trim(), `${8 * 2 ** 21}`);
    assert.equal((await Deno.readTextFile(`${dir}/hugetlb.1GB.max`)).trim(), `${GiB}`);
    for (const d of [s.root, `${s.root}/bcd.slice`, `${s.root}/bcd.slice/bcd-alloc.slice`]) {
      assert.match(await Deno.readTextFile(`${d}/cgroup.subtree_control`), /hugetlb/, d);
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("systemd: remove stops an empty slice and reverts its runtime properties; a busy one is left alone", async () => {
  const s = await fakeSystemdSubject();
  try {
    const name = sliceName("r");
    await s.mgr.apply(name, sliceSettings({ cpu_millis: 1000 }));
    await s.setPopulated(name, true);
    assert.equal(await s.mgr.remove(name), "busy");
    assert.ok(!(await lines(s.log)).some((l) => l.startsWith("stop")), "never stops a slice with a workload");
    await s.setPopulated(name, false);
    assert.equal(await s.mgr.remove(name), "removed");
    assert.deepEqual((await lines(s.log)).slice(-2), [`stop ${name}`, `revert ${name}`]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("systemd: a failing systemctl is an error carrying its message", async () => {
  const s = await fakeSystemdSubject();
  try {
    await Deno.writeTextFile(s.env, "export FAKE_SYSTEMCTL_FAIL=start\n");
    await assert.rejects(
      s.mgr.apply(sliceName("f"), sliceSettings({ cpu_millis: 1000 })),
      (e) => e instanceof CgroupError && /injected failure/.test(e.message),
    );
  } finally {
    await s.cleanup();
  }
});
