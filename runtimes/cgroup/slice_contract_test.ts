/** One contract for every SliceManager: cgroupfs and systemd on fake trees, and cgroupfs on the real cgroup2 mount. */
import assert from "node:assert/strict";
import { sliceName } from "../../core/converge/devices/slice.ts";
import { HelperError } from "../../core/helper/mod.ts";
import { helperSliceSubject } from "../helper/helper_testing.ts";
import { sliceDir } from "./cgroup_files.ts";
import {
  fakeCgroupfsSubject,
  fakeSystemdSubject,
  pageSizeUnavailable,
  realCgroupfsSubject,
  realCgroupUnavailable,
  type SliceSubject,
} from "./trees_testing.ts";

const realSkip = realCgroupUnavailable();
if (realSkip) console.log(`real cgroup2 contract skipped: ${realSkip}`);
for (const size of ["2MB", "1GB"] as const) {
  const why = realSkip ? undefined : pageSizeUnavailable(size);
  if (why) console.log(`real cgroup2 contract runs without hugetlb.${size}.max: ${why}`);
}

const SUBJECTS: [string, () => Promise<SliceSubject>, boolean][] = [
  ["cgroupfs on a fake tree", fakeCgroupfsSubject, false],
  ["systemd via a fake systemctl", fakeSystemdSubject, false],
  ["cgroupfs on the real cgroup2 mount", realCgroupfsSubject, !!realSkip],
  ["HelperSliceManager through the root helper", helperSliceSubject, false],
];

for (const [label, make, ignore] of SUBJECTS) {
  Deno.test({ name: `SliceManager contract (${label})`, ignore, sanitizeResources: false }, async (t) => {
    const s = await make();
    const name = sliceName("contract-1");
    try {
      await t.step("apply creates the slice and list shows it", async () => {
        await s.mgr.apply(name, s.settings);
        await s.afterCreate(name);
        assert.deepEqual(await s.mgr.list(), [name]);
        assert.deepEqual(await s.mgr.hugetlbUsage(name), { bytes2MB: 0, bytes1GB: 0 });
      });
      await t.step("apply again is harmless", async () => {
        await s.mgr.apply(name, s.settings);
        assert.deepEqual(await s.mgr.list(), [name]);
      });
      await t.step("a slice with a workload is not removed", async () => {
        await s.setPopulated(name, true);
        assert.equal(await s.mgr.remove(name), "busy");
        assert.deepEqual(await s.mgr.list(), [name]);
      });
      await t.step("once cgroup.events says it is empty, remove takes it away", async () => {
        await s.setPopulated(name, false);
        assert.equal(await s.mgr.remove(name), "removed");
        assert.deepEqual(await s.mgr.list(), []);
        assert.equal(await s.mgr.hugetlbUsage(name), undefined);
        await assert.rejects(Deno.stat(sliceDir(s.root, name)), Deno.errors.NotFound);
      });
      await t.step("removing an absent slice says so", async () => {
        assert.equal(await s.mgr.remove(name), "absent");
      });
      await t.step("a name that is not a hold slice is refused", async () => {
        // Directly a RangeError; through the helper its refusal, `invalid-argument`, before anything runs.
        await assert.rejects(
          s.mgr.apply("user-1000.slice", {}),
          (e) => e instanceof RangeError || (e instanceof HelperError && e.code === "invalid-argument"),
        );
      });
    } finally {
      await s.cleanup();
    }
  });
}
