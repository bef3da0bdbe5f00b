import assert from "node:assert/strict";
import { compareNatural, listDir } from "./sysfs.ts";

/**
 * Names as sysfs and /dev/disk/by-id hold them: network interfaces, block devices and their partitions, NUMA nodes
 * and the node directory's attributes, PCI addresses, CPUs, hugepage pools, disk ids.
 */
const NAMES = [
  "eth0",
  "eth1",
  "eth2",
  "eth10",
  "eth11",
  "eth100",
  "lo",
  "ifb0",
  "ifb1",
  "enp1s0f0",
  "enp1s0f1",
  "enp10s0f0",
  "enp2s0",
  "ens3",
  "ens10",
  "eno1",
  "eno2np0",
  "bond0",
  "bond0.100",
  "bond0.20",
  "br-ext",
  "br0",
  "virbr0",
  "virbr0-nic",
  "veth1a2b3c",
  "veth10",
  "vnet0",
  "vnet12",
  "vnet2",
  "docker0",
  "tap0",
  "tap11",
  "tap2",
  "sda",
  "sda1",
  "sda2",
  "sda10",
  "sdb",
  "sdaa",
  "sdz",
  "vda",
  "vda1",
  "vdb",
  "nvme0n1",
  "nvme0n1p1",
  "nvme0n1p2",
  "nvme0n1p10",
  "nvme0n10",
  "nvme0n2",
  "nvme1n1",
  "nvme10n1",
  "nvme2n1",
  "loop0",
  "loop1",
  "loop10",
  "loop7",
  "dm-0",
  "dm-1",
  "dm-10",
  "dm-2",
  "md0",
  "md127",
  "sr0",
  "zram0",
  "zd0",
  "zd16",
  "zd32",
  "rbd0",
  "node0",
  "node1",
  "node2",
  "node10",
  "has_cpu",
  "has_generic_initiator",
  "has_memory",
  "has_normal_memory",
  "online",
  "possible",
  "power",
  "uevent",
  "0000:00:00.0",
  "0000:00:01.0",
  "0000:00:02.0",
  "0000:00:1f.2",
  "0000:00:1f.3",
  "0000:3b:00.0",
  "0000:3b:00.1",
  "0000:af:00.0",
  "0000:b1:00.0",
  "0001:00:00.0",
  "10000:00:02.0",
  "cpu0",
  "cpu1",
  "cpu2",
  "cpu10",
  "cpu100",
  "cpu11",
  "cpufreq",
  "cpuidle",
  "hugepages-2048kB",
  "hugepages-1048576kB",
  "nvme-eui.0025388b91b2a1c5",
  "nvme-Samsung_SSD_980_PRO_1TB_S5GXNX0T123456",
  "wwn-0x5000c500a1b2c3d4",
  "wwn-0x5000c500a1b2c3d4-part1",
  "wwn-0x5000c500a1b2c3d4-part2",
  "ata-ST4000NM0035-1V4107_ZC1A2B3C",
  "ata-ST4000NM0035-1V4107_ZC1A2B3C-part1",
  "virtio-vd1",
  "virtio-vd10",
  "x007",
  "x07",
  "x7",
  "x8",
  "a0b",
  "a00b",
  "a1b",
  "a01b",
  "a1c",
  "aB",
  "Ab",
  "ab",
  "AB",
  "a-b",
  "a_b",
  "a b",
  "a.b",
  "a:b",
  "a~b",
  "a$b",
  "a+b",
  "a/b",
  "A-1",
  "a-01",
  "Z9",
  "z10",
  "DM-0",
  "dm-00",
  "ID_SERIAL",
  "id_serial_short",
];

Deno.test("compareNatural orders every pair of sysfs names as localeCompare('en', numeric) does", () => {
  const collator = (a: string, b: string) => a.localeCompare(b, "en", { numeric: true });
  for (const a of NAMES) {
    for (const b of NAMES) {
      assert.equal(Math.sign(compareNatural(a, b)), Math.sign(collator(a, b)), `${a} vs ${b}`);
    }
  }
  assert.deepEqual([...NAMES].sort(compareNatural), [...NAMES].sort(collator));
});

Deno.test("compareNatural: numbers by value, then text in ICU's order, a prefix first, then lowercase first", () => {
  const rows: [string, string, -1 | 0 | 1][] = [
    ["eth2", "eth10", -1],
    ["eth10", "eth2", 1],
    ["nvme0n1p2", "nvme0n1p10", -1],
    ["sda", "sda1", -1],
    ["sdz", "sdaa", 1],
    ["node9", "node10", -1],
    ["a", "a", 0],
    ["", "a", -1],
    ["99999999999999999999", "100000000000000000000", -1],
    ["x007", "x7", 0],
    ["aB", "Ab", -1],
    ["a-b", "a_b", 1],
  ];
  for (const [a, b, want] of rows) assert.equal(Math.sign(compareNatural(a, b)), want, `${a} vs ${b}`);
});

Deno.test("listDir sorts a directory's entries by compareNatural, without ICU's collator", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-sysfs-" });
  const localeCompare = String.prototype.localeCompare;
  try {
    for (const n of ["eth10", "eth2", "lo", "eth1"]) await Deno.mkdir(`${dir}/${n}`);
    // A collator's first use costs a process ~7.5 ms of CPU and ~3 MiB (sysfs.ts): listDir must not make one.
    String.prototype.localeCompare = () => {
      throw new Error("listDir called localeCompare");
    };
    assert.deepEqual(await listDir(dir), ["eth1", "eth2", "eth10", "lo"]);
    String.prototype.localeCompare = localeCompare;
    assert.deepEqual(await listDir(`${dir}/absent`), []);
  } finally {
    String.prototype.localeCompare = localeCompare;
    await Deno.remove(dir, { recursive: true });
  }
});
