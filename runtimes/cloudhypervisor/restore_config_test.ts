import assert from "node:assert/strict";
import type { VmConfig } from "./api_types.ts";
import { rebuildRestoreConfig, RestoreConfigRefused } from "./restore_config.ts";

const G = 1024 ** 3;
const OWN: VmConfig = {
  payload: { firmware: "/usr/share/cloud-hypervisor/CLOUDHV.fd" },
  cpus: { boot_vcpus: 2, max_vcpus: 2, affinity: [{ vcpu: 0, host_cpus: [4] }, { vcpu: 1, host_cpus: [5] }] },
  memory: { size: 2 * G },
  disks: [{ path: "/d/new/disk.qcow2", image_type: "Qcow2", backing_files: false }],
  serial: { mode: "Socket", socket: "/d/new/serial.sock" },
  console: { mode: "Off" },
  rng: { src: "/dev/urandom" },
  balloon: { size: 0, free_page_reporting: true },
};
const NICS = [{ mac: "52:54:00:00:00:0a", bridge: "br0" }];

/** A tenant's saved configuration with something in every section, paths of the old instance, and extras. */
const SAVED = {
  cpus: {
    boot_vcpus: 2,
    max_vcpus: 2,
    topology: { threads_per_core: 1 },
    affinity: [{ vcpu: 0, host_cpus: [0] }],
    kvm_hyperv: false,
  },
  memory: {
    size: 2 * G,
    shared: false,
    hugepages: true,
    hugepage_size: 2 * 1024 * 1024,
    zones: [{ id: "z", size: 1, file: "/etc/x" }],
    thp: true,
  },
  platform: { num_pci_segments: 1, system_uuid: "u-1", oem_strings: ["x"], unknown_platform_key: 1 },
  payload: { kernel: "/boot/evil", cmdline: "init=/bin/sh" },
  disks: [{ path: "/d/old/disk.qcow2" }, { path: "/etc/shadow" }],
  net: [{ id: "net0", mac: "52:54:00:00:00:99", tap: "eth0" }],
  serial: { mode: "File", file: "/etc/passwd" },
  console: { mode: "Pty" },
  rng: { src: "/dev/sda" },
  balloon: { size: G, deflate_on_oom: true },
  devices: [{ path: "/sys/bus/pci/devices/0000:00:1f.2/" }],
  fs: [{ tag: "x", socket: "/run/virtiofsd.sock" }],
  pmem: [{ file: "/etc/passwd" }],
  vsock: { cid: 3, socket: "/run/v.sock" },
  debug_console: { mode: "File", file: "/etc/x" },
  landlock_enable: false,
  landlock_rules: [{ path: "/", access: "rw" }],
  tpm: { socket: "/run/tpm.sock" },
};

Deno.test("rebuildRestoreConfig(): keeps only the cpus, memory and platform allowlists; bcd supplies the rest; everything else is dropped", async (t) => {
  const r = rebuildRestoreConfig(SAVED, OWN, NICS) as Record<string, unknown>;
  const rows: Array<[string, () => void]> = [
    [
      "cpus: allowlisted keys kept, the snapshot's affinity replaced by bcd's pinning",
      () =>
        assert.deepEqual(r.cpus, {
          boot_vcpus: 2,
          max_vcpus: 2,
          topology: { threads_per_core: 1 },
          kvm_hyperv: false,
          affinity: OWN.cpus!.affinity,
        }),
    ],
    [
      "memory: allowlisted keys kept, zones and huge pages dropped",
      () => assert.deepEqual(r.memory, { size: 2 * G, shared: false, thp: true }),
    ],
    [
      "platform: allowlisted keys kept, others dropped",
      () => assert.deepEqual(r.platform, { num_pci_segments: 1, system_uuid: "u-1", oem_strings: ["x"] }),
    ],
    ["payload, disks, serial, console, rng are bcd's (the new instance's paths)", () => {
      assert.deepEqual([r.payload, r.disks, r.serial, r.console, r.rng], [
        OWN.payload,
        OWN.disks,
        OWN.serial,
        OWN.console,
        OWN.rng,
      ]);
    }],
    ["the balloon is bcd's, never the snapshot's", () => assert.deepEqual(r.balloon, OWN.balloon)],
    [
      "NICs are bcd's, net<i> with the spec's MAC and no tap name",
      () => assert.deepEqual(r.net, [{ id: "net0", mac: "52:54:00:00:00:0a", num_queues: 2 }]),
    ],
    ["devices are bcd's (none here): the snapshot's PCI device is dropped", () => assert.equal(r.devices, undefined)],
    [
      "fs, pmem, vsock, debug console, landlock, tpm and any other key are dropped",
      () =>
        assert.deepEqual(Object.keys(r).sort(), [
          "balloon",
          "console",
          "cpus",
          "disks",
          "memory",
          "net",
          "payload",
          "platform",
          "rng",
          "serial",
        ]),
    ],
  ];
  for (const [what, check] of rows) await t.step(what, check);
});

Deno.test("rebuildRestoreConfig(): refuses another vCPU count, memory size or NIC count (snapshot-shape), and a config that is not one", async (t) => {
  const cases: Array<[string, unknown, string]> = [
    ["boot_vcpus differs", { ...SAVED, cpus: { ...SAVED.cpus, boot_vcpus: 1 } }, "snapshot-shape"],
    ["max_vcpus differs", { ...SAVED, cpus: { ...SAVED.cpus, max_vcpus: 4 } }, "snapshot-shape"],
    ["memory differs", { ...SAVED, memory: { ...SAVED.memory, size: G } }, "snapshot-shape"],
    ["NIC count differs", { ...SAVED, net: [] }, "snapshot-shape"],
    ["no cpus", { memory: SAVED.memory }, "bad-snapshot"],
    ["not an object", [1, 2], "bad-snapshot"],
  ];
  for (const [what, saved, reason] of cases) {
    await t.step(what, () => {
      assert.throws(
        () => rebuildRestoreConfig(saved, OWN, NICS),
        (e) => e instanceof RestoreConfigRefused && e.reason === reason,
      );
    });
  }
});
