import assert from "node:assert/strict";
import { hugePageSizes, ProcHostMemory } from "./host_memory.ts";

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
      hugePageSizes: [2 ** 30],
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

Deno.test("hugePageSizes lists the sizes the host has: a host without 1 GiB pages has only 2 MiB", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-hostmem-" });
  try {
    assert.deepEqual(await hugePageSizes(root), [], "no hugepages directory: no sizes");
    await Deno.mkdir(`${root}/kernel/mm/hugepages/hugepages-2048kB`, { recursive: true });
    await Deno.writeTextFile(`${root}/kernel/mm/hugepages/README`, "not a size");
    assert.deepEqual(await hugePageSizes(root), [2 * 2 ** 20]);
    await Deno.mkdir(`${root}/kernel/mm/hugepages/hugepages-1048576kB`);
    assert.deepEqual(await hugePageSizes(root), [2 * 2 ** 20, 2 ** 30]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("hugePageSizes on this machine matches its /sys/kernel/mm/hugepages", async () => {
  const want: number[] = [];
  try {
    for await (const e of Deno.readDir("/sys/kernel/mm/hugepages")) {
      const m = /^hugepages-(\d+)kB$/.exec(e.name);
      if (m) want.push(Number(m[1]) * 1024);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  assert.deepEqual(await hugePageSizes(), want.sort((a, b) => a - b));
  assert.deepEqual((await new ProcHostMemory().read()).hugePageSizes, await hugePageSizes());
});
