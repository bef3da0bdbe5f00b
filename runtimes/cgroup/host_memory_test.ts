import assert from "node:assert/strict";
import { ProcHostMemory } from "./host_memory.ts";

Deno.test("ProcHostMemory reads MemTotal, the pool and per-node free pages from a tree", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-hostmem-" });
  try {
    await Deno.mkdir(`${root}/proc`);
    await Deno.writeTextFile(`${root}/proc/meminfo`, "MemTotal:       131072000 kB\nHugetlb:        4194304 kB\n");
    const hp = `${root}/sys/kernel/mm/hugepages/hugepages-1048576kB`;
    await Deno.mkdir(hp, { recursive: true });
    await Deno.writeTextFile(`${hp}/free_hugepages`, "4\n");
    await Deno.writeTextFile(`${hp}/resv_hugepages`, "1\n");
    for (const [n, free] of [[0, 3], [1, 1]]) {
      const d = `${root}/sys/devices/system/node/node${n}/hugepages/hugepages-1048576kB`;
      await Deno.mkdir(d, { recursive: true });
      await Deno.writeTextFile(`${d}/free_hugepages`, `${free}\n`);
    }
    await Deno.mkdir(`${root}/sys/devices/system/node/possible`, { recursive: true }); // not a node
    const m = await new ProcHostMemory({ proc: `${root}/proc`, sys: `${root}/sys` }).read();
    assert.deepEqual(m, {
      memTotalBytes: 131072000 * 1024,
      hugetlbBytes: 4194304 * 1024,
      pages2Mi: undefined,
      pages1Gi: { free: 4, reserved: 1, freeByNode: { 0: 3, 1: 1 } },
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("ProcHostMemory reads this machine's /proc/meminfo and huge page pools", async () => {
  const m = await new ProcHostMemory().read();
  assert.ok(m.memTotalBytes > 0);
  assert.ok(m.hugetlbBytes >= 0);
});

Deno.test("ProcHostMemory throws when meminfo cannot be read (the converger then binds with a warning)", async () => {
  await assert.rejects(new ProcHostMemory({ proc: "/nonexistent" }).read(), Deno.errors.NotFound);
});
