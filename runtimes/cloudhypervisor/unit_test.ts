import assert from "node:assert/strict";
import { memoryMax, systemdRunArgs, type UnitInput, unitName, unitProperties, VMM_UID_BASE } from "./unit.ts";

const MiB = 1024 * 1024;
const BASE: UnitInput = {
  id: "vm-1",
  uid: VMM_UID_BASE + 3,
  runtimeDir: "/var/lib/bcd/cloud-hypervisor",
  vcpus: 2,
  memoryBytes: 2048 * MiB,
  hugepages: false,
  gpus: false,
  allowedCpus: "",
  allowedMems: "",
  baseImage: `/var/lib/bcd/cloud-hypervisor/images/${"a".repeat(64)}.qcow2`,
  volumes: [],
  underHelper: false,
  binary: "/usr/bin/cloud-hypervisor",
};
const INST = "/var/lib/bcd/cloud-hypervisor/instances/vm-1";

/** The seed's table, one row per row: the properties each row names, exactly, for {@link BASE}. */
const ROWS: Array<[string, string[]]> = [
  ["Identity and privileges", [
    `User=${VMM_UID_BASE + 3}`,
    `Group=${VMM_UID_BASE + 3}`,
    "CapabilityBoundingSet=",
    "AmbientCapabilities=",
    "NoNewPrivileges=yes",
    "LimitMEMLOCK=infinity",
    "UMask=0077",
  ]],
  ["Devices", ["DevicePolicy=closed", "DeviceAllow=/dev/kvm rw"]],
  ["Files", [
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "ProtectProc=invisible",
    "TemporaryFileSystem=/run:ro",
    "TemporaryFileSystem=/var:ro",
    "InaccessiblePaths=/etc/bcd",
    "InaccessiblePaths=/etc/ssh",
    "InaccessiblePaths=/etc/libvirt",
    "InaccessiblePaths=/etc/shadow",
    "InaccessiblePaths=/etc/gshadow",
    `BindPaths=${INST}`,
    `ReadWritePaths=${INST}`,
    `BindReadOnlyPaths=${BASE.baseImage}`,
  ]],
  ["Kernel and system", [
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "RestrictSUIDSGID=yes",
    "RestrictRealtime=yes",
    "RestrictNamespaces=yes",
    "LockPersonality=yes",
    "SystemCallFilter=~@debug @mount @reboot @swap @module @raw-io @clock @cpu-emulation @obsolete",
  ]],
  ["Network", ["PrivateNetwork=yes", "RestrictAddressFamilies=AF_UNIX", "IPAddressDeny=any"]],
  ["Limits from the flavor", [
    `MemoryMax=${2048 * MiB + 64 * MiB + 256 * MiB}`,
    `TasksMax=${4 * 2 + 128}`,
    "CPUQuota=300%",
  ]],
];

Deno.test("unitProperties() is exactly the seed's property table, row by row and nothing else", async (t) => {
  const props = unitProperties(BASE);
  let at = 0;
  for (const [row, want] of ROWS) {
    await t.step(row, () => {
      assert.deepEqual(props.slice(at, at + want.length), want);
      at += want.length;
    });
  }
  assert.equal(at, props.length, "no property outside the table");
});

Deno.test("unitProperties(): the variants each row names", async (t) => {
  const has = (u: Partial<UnitInput>, p: string) => unitProperties({ ...BASE, ...u }).includes(p);
  await t.step("under bcd helper the UMask is 0007, so inherited ACL entries stay effective", () => {
    assert.ok(has({ underHelper: true }, "UMask=0007"));
    assert.ok(!has({ underHelper: true }, "UMask=0077"));
  });
  await t.step("with GPUs, /dev/vfio/vfio and char-vfio are allowed too", () => {
    const p = unitProperties({ ...BASE, gpus: true });
    assert.deepEqual(p.filter((x) => x.startsWith("DeviceAllow=")), [
      "DeviceAllow=/dev/kvm rw",
      "DeviceAllow=/dev/vfio/vfio rw",
      "DeviceAllow=char-vfio rw",
    ]);
  });
  await t.step("a data dir outside /var gets read-only tmpfs over its instances/ and images/ too", () => {
    const p = unitProperties({ ...BASE, runtimeDir: "/srv/bcd/cloud-hypervisor", baseImage: null });
    assert.deepEqual(p.filter((x) => x.startsWith("TemporaryFileSystem=")), [
      "TemporaryFileSystem=/run:ro",
      "TemporaryFileSystem=/var:ro",
      "TemporaryFileSystem=/srv/bcd/cloud-hypervisor/instances:ro",
      "TemporaryFileSystem=/srv/bcd/cloud-hypervisor/images:ro",
    ]);
    assert.ok(!p.some((x) => x.startsWith("BindReadOnlyPaths=")), "a restored disk binds no base image");
  });
  await t.step(
    "huge pages: MemoryMax charges only the VMM's overhead; a restored memory config is charged in full",
    () => {
      assert.equal(memoryMax(2048 * MiB, true), 64 * MiB + 256 * MiB);
      assert.equal(memoryMax(2048 * MiB, false), 2048 * MiB + 64 * MiB + 256 * MiB);
      assert.ok(has({ hugepages: true }, `MemoryMax=${320 * MiB}`));
    },
  );
  await t.step("placement pins the unit with AllowedCPUs and AllowedMemoryNodes", () => {
    const p = unitProperties({ ...BASE, allowedCpus: "4-5", allowedMems: "1" });
    assert.deepEqual(p.slice(-2), ["AllowedCPUs=4-5", "AllowedMemoryNodes=1"]);
  });
  await t.step("volumes are bound read-write or read-only as attached", () => {
    const p = unitProperties({
      ...BASE,
      volumes: [{ path: "/var/lib/bcd/volumes/a.raw", readonly: false }, {
        path: "/var/lib/bcd/volumes/b.raw",
        readonly: true,
      }],
    });
    assert.ok(p.includes("BindPaths=/var/lib/bcd/volumes/a.raw"));
    assert.ok(p.includes("BindReadOnlyPaths=/var/lib/bcd/volumes/b.raw"));
    assert.ok(!p.some((x) => x.startsWith("BindPaths=-")), "no store directory without one");
    const q = unitProperties({ ...BASE, volumesDir: "/var/lib/bcd/volumes" });
    assert.ok(q.includes("BindPaths=-/var/lib/bcd/volumes"), "the store directory is bound for hot-plugged volumes");
  });
  await t.step("a uid outside 0x7FFD0000.. and an id that is not an instance id are refused", () => {
    assert.throws(() => unitProperties({ ...BASE, uid: 1000 }), RangeError);
    assert.throws(() => unitProperties({ ...BASE, id: "../x" }), TypeError);
    assert.throws(() => unitName("a.socket/x"), TypeError);
  });
});

Deno.test("systemdRunArgs(): bcd-ch-<id>.service in bcd-instances.slice, collected, running the VMM on the instance's api.sock", () => {
  const a = systemdRunArgs(BASE);
  assert.deepEqual(a.slice(0, 3), ["--unit=bcd-ch-vm-1.service", "--collect", "--slice=bcd-instances.slice"]);
  assert.deepEqual(a.slice(-4), ["--", "/usr/bin/cloud-hypervisor", "--api-socket", `path=${INST}/api.sock`]);
  assert.equal(a.filter((x) => x.startsWith("--property=")).length, unitProperties(BASE).length);
});
