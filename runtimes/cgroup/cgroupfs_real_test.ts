/**
 * The cgroupfs slice manager against this machine's real cgroup2 mount (`/sys/fs/cgroup/unified`, whose only
 * controller is hugetlb), in a test-owned subtree that is removed afterwards.
 */
import assert from "node:assert/strict";
import { sliceName } from "../../core/converge/devices/slice.ts";
import { CgroupError, isPopulated, sliceDir, writeChecked } from "./cgroup_files.ts";
import { writeSliceFile } from "./cgroupfs.ts";
import { PageSizeUnsupported } from "../../core/converge/devices/ports.ts";
import { hostPageSizesSync, pageSizeUnavailable, realCgroupfsSubject, realCgroupUnavailable } from "./trees_testing.ts";

const skip = realCgroupUnavailable();
if (skip) console.log(`real cgroup2 tests skipped: ${skip}`);

const sizeSkips = { "2MB": pageSizeUnavailable("2MB"), "1GB": pageSizeUnavailable("1GB") };
for (const [size, why] of Object.entries(sizeSkips)) {
  if (!skip && why) console.log(`real cgroup2 hugetlb.${size}.max steps skipped: ${why}`);
}

Deno.test(
  { name: "real cgroup2: hugetlb limits read back from the kernel, enabled on every ancestor", ignore: !!skip },
  async (t) => {
    const s = await realCgroupfsSubject();
    try {
      const name = sliceName("real-1");
      const dir = sliceDir(s.root, name);
      const limits = { "2MB": 5 * 2 ** 21, "1GB": 2 * 2 ** 30 } as const;
      for (const size of ["2MB", "1GB"] as const) {
        await t.step({
          name: `hugetlb.${size}.max`,
          ignore: !!sizeSkips[size],
          fn: async () => {
            const key = size === "2MB" ? "hugetlb2MBMaxBytes" : "hugetlb1GBMaxBytes";
            await s.mgr.apply(name, { [key]: limits[size] });
            assert.equal((await Deno.readTextFile(`${dir}/hugetlb.${size}.max`)).trim(), `${limits[size]}`);
            assert.equal((await Deno.readTextFile(`${dir}/hugetlb.${size}.current`)).trim(), "0");
          },
        });
      }
      await t.step("ancestors, controllers, populated, usage", async () => {
        await s.mgr.apply(name, {});
        for (const d of [s.root, `${s.root}/bcd.slice`, `${s.root}/bcd.slice/bcd-alloc.slice`]) {
          assert.match(await Deno.readTextFile(`${d}/cgroup.subtree_control`), /\bhugetlb\b/, d);
        }
        assert.match(await Deno.readTextFile(`${dir}/cgroup.controllers`), /\bhugetlb\b/);
        assert.equal(await isPopulated(dir), false);
        assert.deepEqual(await s.mgr.hugetlbUsage(name), { bytes2MB: 0, bytes1GB: 0 });
      });
    } finally {
      await s.cleanup();
    }
  },
);

Deno.test(
  { name: "real cgroup2: a page size the host lacks is named, not reported as the kernel's EACCES", ignore: !!skip },
  async () => {
    const s = await realCgroupfsSubject();
    try {
      const name = sliceName("real-5");
      await s.mgr.apply(name, {});
      // 16 GiB pages exist on POWER and arm64 only; on any other host the kernel offers no hugetlb.16GB.max.
      const has16G = hostPageSizesSync().includes(16 * 2 ** 30);
      const file = has16G ? "hugetlb.32KB.max" : "hugetlb.16GB.max";
      const dir = sliceDir(s.root, name);
      await assert.rejects(
        writeSliceFile(dir, { controller: "hugetlb", file, value: "0", readBack: "exact" }),
        (e) =>
          e instanceof PageSizeUnsupported &&
          e.message === `this host has no ${file.split(".")[1]} huge pages: the kernel offers no ${file} in ${dir}`,
      );
    } finally {
      await s.cleanup();
    }
  },
);

Deno.test({
  name: "real cgroup2: a value the kernel rounds is caught by the read-back",
  ignore: !!skip || !!sizeSkips["2MB"],
}, async () => {
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
  ignore: !!skip || !!sizeSkips["2MB"],
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
