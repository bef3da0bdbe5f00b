import assert from "node:assert/strict";
import { CgroupVmmMemory, MAX_MEMORY_STAT_BYTES, parseMemoryStatAnon, sliceCgroupPath } from "./vmm_memory.ts";

Deno.test("sliceCgroupPath() follows systemd's slice naming: each dash opens a level", async (t) => {
  const rows: [string, string][] = [
    ["system.slice", "system.slice"],
    ["bcd-instances.slice", "bcd.slice/bcd-instances.slice"],
    ["a-b-c.slice", "a.slice/a-b.slice/a-b-c.slice"],
  ];
  for (const [name, path] of rows) {
    await t.step(`${name} -> ${path}`, () => assert.equal(sliceCgroupPath(name), path));
  }
  for (const bad of ["bcd-instances", "-a.slice", "a--b.slice", "a/b.slice", "../x.slice"]) {
    await t.step(`${JSON.stringify(bad)} is refused`, () => assert.throws(() => sliceCgroupPath(bad), RangeError));
  }
});

Deno.test("parseMemoryStatAnon() reads the anon line only, whole", () => {
  assert.equal(parseMemoryStatAnon("anon 4096\nfile 8192\nanon_thp 0\n"), 4096);
  assert.equal(parseMemoryStatAnon("file 8192\nanon_thp 2097152\n"), undefined);
  assert.equal(parseMemoryStatAnon("anon 12abc\n"), undefined);
  assert.equal(parseMemoryStatAnon("anon 99999999999999999999\n"), undefined, "beyond a safe integer");
});

Deno.test("CgroupVmmMemory reads bcd-ch-<id>.service's memory.stat below bcd.slice/bcd-instances.slice; none is null", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-vmm-mem-" });
  try {
    const m = new CgroupVmmMemory({ cgroupRoot: root });
    assert.equal(m.statFile("vm-a"), `${root}/bcd.slice/bcd-instances.slice/bcd-ch-vm-a.service/memory.stat`);
    assert.equal(await m.usedBytes("vm-a"), null, "no unit: no reading");
    await Deno.mkdir(`${root}/bcd.slice/bcd-instances.slice/bcd-ch-vm-a.service`, { recursive: true });
    await Deno.writeTextFile(m.statFile("vm-a"), "anon 1048576\nfile 4096\n");
    assert.equal(await m.usedBytes("vm-a"), 1024 * 1024);
    await Deno.writeTextFile(m.statFile("vm-a"), `${"x".repeat(MAX_MEMORY_STAT_BYTES)}\nanon 1048576\n`);
    assert.equal(await m.usedBytes("vm-a"), null, "nothing past the bound is read");
    assert.throws(() => m.statFile("../etc"), TypeError);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

const V2_STAT = "/sys/fs/cgroup/memory.stat";
const v2 = await Deno.stat(V2_STAT).then(() => true, (e) => {
  if (e instanceof Deno.errors.NotFound) return false;
  throw e;
});
if (!v2) console.log(`skipped: a real cgroup v2 memory.stat: ${V2_STAT} is not here (no unified memory controller)`);

Deno.test({
  name: "parseMemoryStatAnon() reads the real kernel's cgroup v2 memory.stat",
  ignore: !v2,
  fn: async () => {
    const n = parseMemoryStatAnon(await Deno.readTextFile(V2_STAT));
    assert.ok(n !== undefined && n > 0, String(n));
  },
});
