import assert from "node:assert/strict";
import { loadAgentConfig } from "../../core/config/mod.ts";
import { CdiHoldStore } from "../cdi/hold_store.ts";
import { CgroupfsSliceManager } from "../cgroup/cgroupfs.ts";
import { SystemdSliceManager } from "../cgroup/systemd.ts";
import { groupId, hostBackends } from "./host_backends.ts";

Deno.test("groupId takes a gid as is, finds a name in the group file, and refuses an unknown group", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-group-" });
  try {
    const file = `${dir}/group`;
    await Deno.writeTextFile(file, "root:x:0:\nbcd:x:998:bcd\nbroken\nkvm:x:104:\n");
    assert.equal(await groupId("998", file), 998);
    assert.equal(await groupId("bcd", file), 998);
    assert.equal(await groupId("kvm", file), 104);
    await assert.rejects(groupId("nobody-here", file), RangeError);
    await assert.rejects(groupId("broken", file), RangeError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the helper's real backends take their directories from its own config", () => {
  const c = loadAgentConfig('[devices]\ncdi_dir = "/x/cdi"\nrun_dir = "/x/run"\ncgroup_root = "/x/cg"\n');
  const b = hostBackends(c, { systemd: false });
  assert.ok(b.holds instanceof CdiHoldStore);
  assert.equal((b.holds as CdiHoldStore).cdiDir, "/x/cdi");
  assert.equal((b.holds as CdiHoldStore).envDir, "/x/run/allocations");
  assert.ok(b.slices instanceof CgroupfsSliceManager);
  assert.equal((b.slices as CgroupfsSliceManager).root, "/x/cg");
  assert.ok(hostBackends(c, { systemd: true }).slices instanceof SystemdSliceManager);
});
