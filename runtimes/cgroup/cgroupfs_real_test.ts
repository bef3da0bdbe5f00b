/**
 * The cgroupfs slice manager against this machine's real cgroup2 mount (`/sys/fs/cgroup/unified`, whose only
 * controller is hugetlb), in a test-owned subtree that is removed afterwards.
 */
import assert from "node:assert/strict";
import { sliceName } from "../../core/converge/devices/slice.ts";
import { CgroupError, isPopulated, sliceDir, writeChecked } from "./cgroup_files.ts";
import { realCgroupfsSubject, realCgroupUnavailable } from "./test_trees.ts";

const skip = realCgroupUnavailable();
if (skip) console.log(`real cgroup2 tests skipped: ${skip}`);

Deno.test(
  { name: "real cgroup2: hugetlb limits read back from the kernel, enabled on every ancestor", ignore: !!skip },
  async () => {
    const s = await realCgroupfsSubject();
    try {
      const name = sliceName("real-1");
      await s.mgr.apply(name, { hugetlb2MBMaxBytes: 5 * 2 ** 21, hugetlb1GBMaxBytes: 2 * 2 ** 30 });
      const dir = sliceDir(s.root, name);
      assert.equal((await Deno.readTextFile(`${dir}/hugetlb.2MB.max`)).trim(), `${5 * 2 ** 21}`);
      assert.equal((await Deno.readTextFile(`${dir}/hugetlb.1GB.max`)).trim(), `${2 * 2 ** 30}`);
      assert.equal((await Deno.readTextFile(`${dir}/hugetlb.2MB.current`)).trim(), "0");
      for (const d of [s.root, `${s.root}/bcd.slice`, `${s.root}/bcd.slice/bcd-alloc.slice`]) {
        assert.match(await Deno.readTextFile(`${d}/cgroup.subtree_control`), /\bhugetlb\b/, d);
      }
      assert.match(await Deno.readTextFile(`${dir}/cgroup.controllers`), /\bhugetlb\b/);
      assert.equal(await isPopulated(dir), false);
      assert.deepEqual(await s.mgr.hugetlbUsage(name), { bytes2MB: 0, bytes1GB: 0 });
    } finally {
      await s.cleanup();
    }
  },
);

Deno.test({ name: "real cgroup2: a value the kernel rounds is caught by the read-back", ignore: !!skip }, async () => {
  const s = await realCgroupfsSubject();
  try {
    const name = sliceName("real-2");
    await s.mgr.apply(name, { hugetlb2MBMaxBytes: 2 ** 21 });
    await assert.rejects(
      writeChecked(`${sliceDir(s.root, name)}/hugetlb.2MB.max`, "3000000"),
      (e) => e instanceof CgroupError && /reads "2097152"/.test(e.message),
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test({
  name: "real cgroup2: memory, cpu and cpuset are not offered here, and the error says which",
  ignore: !!skip,
}, async () => {
  const s = await realCgroupfsSubject();
  try {
    await assert.rejects(
      s.mgr.apply(sliceName("real-3"), { memoryMaxBytes: 2 ** 30 }),
      (e) => e instanceof CgroupError && /controller memory is not available/.test(e.message),
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test({
  name: "real cgroup2: a process in a child cgroup keeps the slice; its empty children go with it",
  ignore: !!skip,
  sanitizeResources: false,
}, async () => {
  const s = await realCgroupfsSubject();
  let child: Deno.ChildProcess | undefined;
  try {
    const name = sliceName("real-4");
    await s.mgr.apply(name, { hugetlb2MBMaxBytes: 2 ** 21 });
    const scope = `${sliceDir(s.root, name)}/workload.scope`;
    await Deno.mkdir(scope);
    child = new Deno.Command("sleep", { args: ["60"], stdin: "null", stdout: "null", stderr: "null" }).spawn();
    await Deno.writeTextFile(`${scope}/cgroup.procs`, `${child.pid}\n`);
    assert.equal(await isPopulated(sliceDir(s.root, name)), true, "populated propagates up");
    assert.equal(await s.mgr.remove(name), "busy");
    child.kill("SIGKILL");
    await child.status;
    child = undefined;
    for (let i = 0; i < 200 && await isPopulated(sliceDir(s.root, name)); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(await s.mgr.remove(name), "removed");
    await assert.rejects(Deno.stat(scope), Deno.errors.NotFound);
  } finally {
    if (child) {
      child.kill("SIGKILL");
      await child.status;
    }
    await s.cleanup();
  }
});
