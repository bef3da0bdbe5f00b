import assert from "node:assert/strict";
import { SysfsHostInventory } from "./inventory.ts";

async function put(root: string, path: string, text: string): Promise<void> {
  const full = `${root}/${path}`;
  await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(full, text);
}

async function link(root: string, path: string, target: string): Promise<void> {
  const full = `${root}/${path}`;
  await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
  await Deno.symlink(target, full);
}

/** A two-socket host with two NUMA nodes, an NVMe disk, a loop device, a NIC and lo. */
async function fakeHost(root: string): Promise<void> {
  const cpu = (p: number, socket: number, core: number) =>
    `processor\t: ${p}\nmodel name\t: AMD EPYC 9654\nphysical id\t: ${socket}\ncore id\t\t: ${core}\nflags\t\t: fpu svm avx2 avx512f sse\n`;
  await put(root, "proc/cpuinfo", [cpu(0, 0, 0), cpu(1, 0, 1), cpu(2, 1, 0), cpu(3, 1, 1), cpu(4, 0, 0)].join("\n"));
  await put(root, "proc/meminfo", "MemTotal:       16384000 kB\nMemFree:         1000 kB\n");
  await put(root, "proc/sys/kernel/hostname", "gpu-17\n");
  await put(root, "proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
  await put(root, "proc/sys/kernel/random/boot_id", "b0071d00-0000-4000-8000-000000000001\n");
  await put(root, "etc/os-release", 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 24.04.1 LTS"\n');
  await put(root, "sys/class/dmi/id/sys_vendor", "Supermicro\n");
  for (const n of [0, 1]) {
    const d = `sys/devices/system/node/node${n}`;
    await put(root, `${d}/cpulist`, n === 0 ? "0-1,4\n" : "2-3\n");
    await put(root, `${d}/meminfo`, `Node ${n} MemTotal:       8192000 kB\nNode ${n} MemFree: 1 kB\n`);
    await put(root, `${d}/hugepages/hugepages-2048kB/nr_hugepages`, "512\n");
    await put(root, `${d}/hugepages/hugepages-2048kB/free_hugepages`, "500\n");
    await put(root, `${d}/hugepages/hugepages-1048576kB/nr_hugepages`, `${n * 4}\n`);
    await put(root, `${d}/hugepages/hugepages-1048576kB/free_hugepages`, "0\n");
  }
  await put(root, "sys/devices/system/node/online", "0-1\n");
  const nvme = "sys/devices/pci0000:00/0000:00:1d.0/nvme/nvme0/nvme0n1";
  await put(root, `${nvme}/size`, "7814037168\n");
  await put(root, `${nvme}/queue/rotational`, "0\n");
  await put(root, `${nvme}/device/model`, "SAMSUNG MZQL27T6HBLA\n");
  await put(root, `${nvme}/device/serial`, "S6CKNE0T123456\n");
  await put(root, `${nvme}/device/numa_node`, "1\n");
  await link(root, "sys/block/nvme0n1", `${root}/${nvme}`);
  await put(root, "sys/devices/virtual/block/loop0/size", "0\n");
  await link(root, "sys/block/loop0", `${root}/sys/devices/virtual/block/loop0`);
  await put(root, "dev/nvme0n1", "");
  await link(root, "dev/disk/by-id/wwn-0x5002538e000000", `${root}/dev/nvme0n1`);
  await link(root, "dev/disk/by-id/nvme-SAMSUNG_MZQL27T6HBLA_S6CKNE0T123456", `${root}/dev/nvme0n1`);
  const nicDev = "sys/devices/pci0000:17/0000:17:00.0/0000:18:00.0";
  await put(root, `${nicDev}/numa_node`, "0\n");
  await put(root, "sys/bus/pci/drivers/mlx5_core/.keep", "");
  await link(root, `${nicDev}/driver`, `${root}/sys/bus/pci/drivers/mlx5_core`);
  await put(root, "sys/devices/virtual/net/eth0/address", "b8:3f:d2:00:00:01\n");
  await put(root, "sys/devices/virtual/net/eth0/speed", "100000\n");
  await put(root, "sys/devices/virtual/net/eth0/operstate", "up\n");
  await link(root, "sys/devices/virtual/net/eth0/device", `${root}/${nicDev}`);
  await link(root, "sys/class/net/eth0", `${root}/sys/devices/virtual/net/eth0`);
  await put(root, "sys/devices/virtual/net/lo/address", "00:00:00:00:00:00\n");
  await link(root, "sys/class/net/lo", `${root}/sys/devices/virtual/net/lo`);
}

Deno.test("SysfsHostInventory reads a fake two-socket host field by field", async () => {
  const root = await Deno.makeTempDir();
  try {
    await fakeHost(root);
    const inv = await new SysfsHostInventory({
      proc: `${root}/proc`,
      sys: `${root}/sys`,
      etc: `${root}/etc`,
      dev: `${root}/dev`,
      interfaces: () => [{ name: "eth0", cidr: "10.0.0.5/24" }, { name: "lo", cidr: "127.0.0.1/8" }],
    }).read();
    assert.equal(inv.hostname, "gpu-17");
    assert.equal(inv.kernel, "6.8.0-45-generic");
    assert.equal(inv.boot_id, "b0071d00-0000-4000-8000-000000000001");
    assert.equal(inv.os_release, "Ubuntu 24.04.1 LTS");
    assert.equal(inv.system_vendor, "Supermicro");
    assert.equal(inv.system_serial, "");
    assert.deepEqual(inv.cpu, {
      model: "AMD EPYC 9654",
      sockets: 2,
      cores: 4,
      threads: 5,
      flags: ["avx2", "avx512f", "svm"],
    });
    assert.equal(inv.memory_bytes, 16384000 * 1024);
    assert.deepEqual(inv.numa_nodes, [
      {
        id: 0,
        cpus: "0-1,4",
        memory_bytes: 8192000 * 1024,
        hugepages_2mi_total: 512,
        hugepages_2mi_free: 500,
        hugepages_1gi_total: 0,
        hugepages_1gi_free: 0,
      },
      {
        id: 1,
        cpus: "2-3",
        memory_bytes: 8192000 * 1024,
        hugepages_2mi_total: 512,
        hugepages_2mi_free: 500,
        hugepages_1gi_total: 4,
        hugepages_1gi_free: 0,
      },
    ]);
    assert.deepEqual(inv.disks, [{
      name: "nvme0n1",
      by_id: `${root}/dev/disk/by-id/nvme-SAMSUNG_MZQL27T6HBLA_S6CKNE0T123456`,
      model: "SAMSUNG MZQL27T6HBLA",
      serial: "S6CKNE0T123456",
      size_bytes: 7814037168 * 512,
      rotational: false,
      transport: "nvme",
      numa_node: 1,
    }]);
    assert.deepEqual(inv.nics, [{
      name: "eth0",
      mac: "b8:3f:d2:00:00:01",
      speed_mbps: 100000,
      pci_bus_id: "0000:18:00.0",
      numa_node: 0,
      driver: "mlx5_core",
      addresses: ["10.0.0.5/24"],
      link_up: true,
    }]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("SysfsHostInventory reads the real host it runs on", async () => {
  const inv = await new SysfsHostInventory().read();
  assert.ok(inv.cpu!.threads! >= 1, "at least one CPU");
  assert.equal(inv.cpu!.threads, navigator.hardwareConcurrency);
  assert.ok(inv.memory_bytes! > 0);
  assert.match(inv.boot_id!, /^[0-9a-f-]{36}$/);
  assert.ok(inv.kernel!.length > 0);
  for (const d of inv.disks ?? []) assert.doesNotMatch(d.name!, /^(loop|zram|ram)/);
  for (const n of inv.nics ?? []) assert.notEqual(n.name, "lo");
});
