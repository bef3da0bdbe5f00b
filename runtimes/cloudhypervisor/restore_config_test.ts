import assert from "node:assert/strict";
import type { VmConfig } from "./api_types.ts";
import { rebuildRestoreConfig, RestoreConfigRefused, restoredDisks } from "./restore_config.ts";

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

Deno.test("restoredDisks(): the current spec's volumes come back by serial under the snapshot's disk id, the others are hot-added after, and nothing else of the snapshot's disks is used", async (t) => {
  const root = { path: "/d/new/disk.qcow2", image_type: "Qcow2" as const, backing_files: false };
  const seed = { path: "/d/new/seed.iso", image_type: "Raw" as const, readonly: true };
  const vol = (v: string, serial: string) => ({
    id: `vol-${v}`,
    path: `/d/volumes/${v}.raw`,
    image_type: "Raw" as const,
    serial,
    readonly: false,
  });
  const saved = (disks: unknown[]) => ({ disks });
  const rows: Array<[string, unknown, { disks: unknown[]; hotplug: unknown[] }]> = [
    [
      "a serial the snapshot had: restored under its id, at bcd's path, never the snapshot's",
      saved([{ id: "_disk0", path: "/d/old/disk.qcow2" }, { id: "_disk2", path: "/etc/shadow", serial: "data" }]),
      { disks: [root, seed, { ...vol("va", "data"), id: "_disk2" }], hotplug: [] },
    ],
    [
      "a serial the snapshot did not have: hot-added after the restore with bcd's id",
      saved([{ id: "_disk2", path: "/etc/shadow", serial: "other" }]),
      { disks: [root, seed], hotplug: [vol("va", "data")] },
    ],
    [
      "a saved id the VMM would refuse (`__`) or that is no id: hot-added",
      saved([{ id: "__serial", serial: "data" }, { id: 7, serial: "data" }]),
      { disks: [root, seed], hotplug: [vol("va", "data")] },
    ],
    [
      "a saved id a NIC has: hot-added",
      saved([{ id: "net0", serial: "data" }]),
      { disks: [root, seed], hotplug: [vol("va", "data")] },
    ],
    [
      "no saved disks (or no list): every volume hot-added",
      { disks: "x" },
      { disks: [root, seed], hotplug: [vol("va", "data")] },
    ],
  ];
  for (const [what, s, want] of rows) {
    await t.step(what, () => assert.deepEqual(restoredDisks(s, [root, seed, vol("va", "data")], 1), want));
  }
  await t.step("a hot-added volume whose bcd id a restored disk took gets none (the VMM names it)", () => {
    const out = restoredDisks(saved([{ id: "vol-vb", serial: "a" }]), [root, vol("va", "a"), vol("vb", "b")], 0);
    assert.deepEqual(out.disks, [root, { ...vol("va", "a"), id: "vol-vb" }]);
    const { id: _id, ...noId } = vol("vb", "b");
    assert.deepEqual(out.hotplug, [noId]);
  });
  await t.step("rebuildRestoreConfig() puts only the restored disks in the configuration", () => {
    const cfg = rebuildRestoreConfig(
      { ...SAVED, disks: [{ id: "_disk5", path: "/etc/shadow", serial: "data" }] },
      { ...OWN, disks: [root, vol("va", "data"), vol("vb", "new")] },
      NICS,
    );
    assert.deepEqual(cfg.disks, [root, { ...vol("va", "data"), id: "_disk5" }]);
  });
});
