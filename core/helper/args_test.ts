import assert from "node:assert/strict";
import { VALID_ARGS as VALID } from "./args_samples_testing.ts";
import { sliceName } from "../converge/devices/slice.ts";
import { checkArgs } from "./args.ts";
import { HelperError } from "./errors.ts";
import { HELPER_OPS, type HelperOp } from "./protocol.ts";

const GPU = "GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c";
const ENV = ["NVIDIA_VISIBLE_DEVICES=" + GPU, "BCD_ALLOCATION_ID=a1"];
const CDI = {
  kind: "cdi",
  allocationId: "a1",
  binding: "hold",
  devices: [{ class: "gpu", atom: GPU, gpuUuid: GPU, cdiName: GPU, minorNumber: 0 }],
  env: ENV,
};
const MIG = `${GPU}/gi1/ci0`;

Deno.test("checkArgs accepts one well-formed request of every op", () => {
  for (const op of HELPER_OPS) assert.doesNotThrow(() => checkArgs(op, VALID[op]), op);
  assert.deepEqual(checkArgs("host.boot_id", undefined), {}, "args may be omitted when the op takes none");
  assert.deepEqual(
    checkArgs("file.write", { kind: "allocation-env", allocationId: "a1", env: ENV }),
    { kind: "allocation-env", allocationId: "a1", env: ENV },
  );
  const sliced = { ...CDI, env: [...ENV, "BCD_CGROUP_PARENT=bcd-alloc-a1.slice"], cgroupParent: "bcd-alloc-a1.slice" };
  assert.deepEqual(checkArgs("file.write", sliced), sliced);
  const mig = { class: "gpu.mig", atom: MIG, gpuUuid: GPU, cdiName: MIG.replaceAll("/", "_") };
  const migEnv = ["NVIDIA_VISIBLE_DEVICES=MIG-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c", "BCD_ALLOCATION_ID=a1"];
  assert.doesNotThrow(() => checkArgs("file.write", { ...CDI, devices: [mig], env: migEnv }));
  assert.doesNotThrow(() => checkArgs("slice.usage", { name: sliceName("a-b") }), "a dash is escaped as \\x2d");
});

/** Every refusal: op, arguments, code, and what the message names. Nothing runs for any of these. */
/** Env lines the helper itself refuses (issue 27 item 6): the reserved keys forged, and values env readers differ on. */
const ENV_FORGERIES: readonly [string, string, RegExp][] = [
  ["every GPU visible", "NVIDIA_VISIBLE_DEVICES=all", /NVIDIA_VISIBLE_DEVICES=all, not a list of GPU or MIG UUIDs/],
  ["a slice outside bcd", "BCD_CGROUP_PARENT=system.slice", /BCD_CGROUP_PARENT=system.slice, not the hold's own slice/],
  ["a second allocation id", "BCD_ALLOCATION_ID=a2", /sets BCD_ALLOCATION_ID a second time|BCD_ALLOCATION_ID=a1/],
  [
    "another MPS directory",
    "CUDA_MPS_PIPE_DIRECTORY=/tmp/x",
    /CUDA_MPS_PIPE_DIRECTORY=\/tmp\/x, not \/run\/nvidia-mps/,
  ],
  ["a loader preload", "LD_PRELOAD=/tmp/x.so", /sets LD_PRELOAD, a key of the dynamic loader/],
  ["a command substitution", "A=$(reboot)", /carries "\$" \(U\+0024\)/],
  ["a line separator", "A=x\u2028B=y", /\(U\+2028\)/],
  ["an escape", "A=\u001b[2J", /\(U\+001B\)/],
];

const REFUSED: { why: string; op: HelperOp; args: unknown; code: string; names: RegExp }[] = [
  // unknown fields, by name
  {
    why: "a field on an op that takes none",
    op: "host.boot_id",
    args: { path: "/x" },
    code: "unknown-field",
    names: /args\.path/,
  },
  {
    why: "a path on a file write",
    op: "file.write",
    args: { ...CDI, path: "/etc/passwd" },
    code: "unknown-field",
    names: /args\.path/,
  },
  {
    why: "a cdi field on an env write",
    op: "file.write",
    args: { kind: "allocation-env", allocationId: "a1", env: ENV, binding: "hold" },
    code: "unknown-field",
    names: /args\.binding/,
  },
  {
    why: "a field on a device",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], hostPath: "/dev/sda" }] },
    code: "unknown-field",
    names: /devices\[0\]\.hostPath/,
  },
  {
    why: "an unknown slice setting",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { ioWeight: 5 } },
    code: "unknown-field",
    names: /settings\.ioWeight/,
  },
  {
    why: "a path on a slice",
    op: "slice.remove",
    args: { name: "bcd-alloc-a1.slice", root: "/" },
    code: "unknown-field",
    names: /args\.root/,
  },
  // allocation ids
  {
    why: "an empty allocation id",
    op: "file.remove",
    args: { kind: "cdi", allocationId: "" },
    code: "invalid-argument",
    names: /allocationId ""/,
  },
  {
    why: "a path-like allocation id",
    op: "file.remove",
    args: { kind: "cdi", allocationId: "../../etc/passwd" },
    code: "invalid-argument",
    names: /allocationId/,
  },
  {
    why: "an allocation id with a slash",
    op: "file.write",
    args: { ...CDI, allocationId: "a/b" },
    code: "invalid-argument",
    names: /allocationId "a\/b"/,
  },
  {
    why: "an allocation id with ..",
    op: "file.remove",
    args: { kind: "allocation-env", allocationId: "a..b" },
    code: "invalid-argument",
    names: /allocationId/,
  },
  {
    why: "an allocation id starting with a dot",
    op: "file.remove",
    args: { kind: "cdi", allocationId: ".hidden" },
    code: "invalid-argument",
    names: /allocationId/,
  },
  {
    why: "an allocation id of 129 characters",
    op: "file.remove",
    args: { kind: "cdi", allocationId: "a".repeat(129) },
    code: "invalid-argument",
    names: /allocationId/,
  },
  {
    why: "a numeric allocation id",
    op: "file.remove",
    args: { kind: "cdi", allocationId: 7 },
    code: "invalid-argument",
    names: /allocationId 7/,
  },
  // file kinds
  {
    why: "an unknown file kind",
    op: "file.write",
    args: { ...CDI, kind: "sshd" },
    code: "invalid-argument",
    names: /kind "sshd"/,
  },
  {
    why: "an unknown kind to remove",
    op: "file.remove",
    args: { kind: "cdi-dir", allocationId: "a1" },
    code: "invalid-argument",
    names: /kind "cdi-dir"/,
  },
  {
    why: "a missing kind",
    op: "file.remove",
    args: { allocationId: "a1" },
    code: "invalid-argument",
    names: /args\.kind is missing/,
  },
  // the hold a CDI write carries
  {
    why: "an unknown binding",
    op: "file.write",
    args: { ...CDI, binding: "vm" },
    code: "invalid-argument",
    names: /binding "vm"/,
  },
  { why: "no devices", op: "file.write", args: { ...CDI, devices: [] }, code: "invalid-argument", names: /devices/ },
  {
    why: "an unknown device class",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], class: "nic" }] },
    code: "invalid-argument",
    names: /devices\[0\]\.class "nic"/,
  },
  {
    why: "an atom of another class",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], atom: MIG }] },
    code: "invalid-argument",
    names: /devices\[0\]\.atom/,
  },
  {
    why: "a non-GPU atom",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], atom: "/dev/sda", gpuUuid: "/dev/sda", cdiName: "_dev_sda" }] },
    code: "invalid-argument",
    names: /devices\[0\]\.atom "\/dev\/sda"/,
  },
  {
    why: "a gpuUuid not the atom's",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], gpuUuid: "GPU-other" }] },
    code: "invalid-argument",
    names: /gpuUuid "GPU-other"/,
  },
  {
    why: "a CDI name not the atom's",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], cdiName: "x" }] },
    code: "invalid-argument",
    names: /cdiName "x"/,
  },
  {
    why: "a negative minor",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], minorNumber: -1 }] },
    code: "invalid-argument",
    names: /minorNumber -1/,
  },
  {
    why: "a minor past 20 bits",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], minorNumber: 2 ** 20 }] },
    code: "invalid-argument",
    names: /minorNumber/,
  },
  {
    why: "a minor that is a path",
    op: "file.write",
    args: { ...CDI, devices: [{ ...CDI.devices[0], minorNumber: "0/../sda" }] },
    code: "invalid-argument",
    names: /minorNumber/,
  },
  {
    why: "env without the allocation id",
    op: "file.write",
    args: { ...CDI, env: ["A=1"] },
    code: "invalid-argument",
    names: /BCD_ALLOCATION_ID=a1/,
  },
  {
    why: "env of another allocation",
    op: "file.write",
    args: { kind: "allocation-env", allocationId: "a1", env: ["BCD_ALLOCATION_ID=a2"] },
    code: "invalid-argument",
    names: /BCD_ALLOCATION_ID=a1/,
  },
  {
    why: "an env line on two lines",
    op: "file.write",
    args: { ...CDI, env: [...ENV, "A=1\nLD_PRELOAD=/x"] },
    code: "invalid-argument",
    names: /env\[2\]/,
  },
  {
    why: "an env line without =",
    op: "file.write",
    args: { ...CDI, env: [...ENV, "PATH"] },
    code: "invalid-argument",
    names: /env\[2\] "PATH"/,
  },
  {
    why: "too many env lines",
    op: "file.write",
    args: { ...CDI, env: [...ENV, ...Array.from({ length: 256 }, (_, i) => `K${i}=v`)] },
    code: "invalid-argument",
    names: /at most 256/,
  },
  ...ENV_FORGERIES.flatMap(([why, line, names]) => [
    {
      why: `an env file with ${why}`,
      op: "file.write" as const,
      args: {
        kind: "allocation-env",
        allocationId: "a1",
        env: [...ENV.filter((l) => !l.startsWith(line.split("=")[0]! + "=")), line],
      },
      code: "invalid-argument",
      names,
    },
    {
      why: `a CDI spec with ${why}`,
      op: "file.write" as const,
      args: { ...CDI, env: [...ENV.filter((l) => !l.startsWith(line.split("=")[0]! + "=")), line] },
      code: "invalid-argument",
      names,
    },
  ]),
  {
    why: "an env file of more bytes than the cap",
    op: "file.write",
    args: {
      kind: "allocation-env",
      allocationId: "a1",
      env: [...ENV, ...Array.from({ length: 200 }, (_, i) => `K${i}=${"v".repeat(4000)}`)],
    },
    code: "invalid-argument",
    names: /bytes of lines, more than 32768/,
  },
  {
    why: "an env file that sets a key twice",
    op: "file.write",
    args: { kind: "allocation-env", allocationId: "a1", env: [...ENV, "K=1", "K=2"] },
    code: "invalid-argument",
    names: /env\[3\] "K=2" sets K a second time|env\[3\] sets K a second time/,
  },
  {
    why: "a CDI spec of a hold whose env names a GPU it does not hold",
    op: "file.write",
    args: { ...CDI, env: ["NVIDIA_VISIBLE_DEVICES=GPU-00000000-0000-0000-0000-000000000000", "BCD_ALLOCATION_ID=a1"] },
    code: "invalid-argument",
    names: /not one of the hold's devices/,
  },
  {
    why: "a CDI spec with a cgroup parent whose env does not carry it",
    op: "file.write",
    args: { ...CDI, cgroupParent: "bcd-alloc-a1.slice" },
    code: "invalid-argument",
    names: /does not carry BCD_CGROUP_PARENT=bcd-alloc-a1.slice/,
  },
  {
    why: "a kubernetes CDI spec whose env sets NVIDIA_VISIBLE_DEVICES",
    op: "file.write",
    args: { ...CDI, binding: "kubernetes" },
    code: "invalid-argument",
    names: /NVIDIA_VISIBLE_DEVICES on a kubernetes hold/,
  },
  {
    why: "a cgroup parent of another hold",
    op: "file.write",
    args: { ...CDI, cgroupParent: "bcd-alloc-a2.slice" },
    code: "invalid-argument",
    names: /cgroupParent "bcd-alloc-a2.slice"/,
  },
  {
    why: "a cgroup parent outside bcd",
    op: "file.write",
    args: { ...CDI, cgroupParent: "system.slice" },
    code: "invalid-argument",
    names: /cgroupParent/,
  },
  {
    why: "a cgroup parent on a kubernetes hold",
    op: "file.write",
    args: { ...CDI, binding: "kubernetes", cgroupParent: "bcd-alloc-a1.slice" },
    code: "invalid-argument",
    names: /kubernetes/,
  },
  // slices
  {
    why: "a slice that is not a hold's",
    op: "slice.apply",
    args: { name: "user-1000.slice", settings: {} },
    code: "invalid-argument",
    names: /name "user-1000.slice"/,
  },
  {
    why: "a slice path",
    op: "slice.remove",
    args: { name: "../../system.slice" },
    code: "invalid-argument",
    names: /name/,
  },
  {
    why: "a slice of a path-like id",
    op: "slice.remove",
    args: { name: "bcd-alloc-..\\x2f...slice" },
    code: "invalid-argument",
    names: /name/,
  },
  {
    why: "a slice name not in its canonical spelling",
    op: "slice.usage",
    args: { name: "bcd-alloc-\\x61.slice" },
    code: "invalid-argument",
    names: /name/,
  },
  {
    why: "a bad cpulist",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { allowedCpus: "0-3;rm -rf" } },
    code: "invalid-argument",
    names: /allowedCpus/,
  },
  {
    why: "a descending cpulist",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { allowedCpus: "7-3" } },
    code: "invalid-argument",
    names: /allowedCpus "7-3"/,
  },
  {
    why: "a bad node list",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { allowedMemoryNodes: "0,x" } },
    code: "invalid-argument",
    names: /allowedMemoryNodes/,
  },
  {
    why: "a negative count",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { memoryMaxBytes: -1 } },
    code: "invalid-argument",
    names: /memoryMaxBytes/,
  },
  {
    why: "a fractional count",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { cpuQuotaPercent: 1.5 } },
    code: "invalid-argument",
    names: /cpuQuotaPercent/,
  },
  {
    why: "a string count",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: { memoryHighBytes: "max" } },
    code: "invalid-argument",
    names: /memoryHighBytes/,
  },
  {
    why: "settings that are not an object",
    op: "slice.apply",
    args: { name: "bcd-alloc-a1.slice", settings: ["0-3"] },
    code: "invalid-argument",
    names: /settings is not an object/,
  },
  // GPUs
  {
    why: "a MIG device's UUID",
    op: "gpu.reset",
    args: { gpuUuid: "MIG-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c" },
    code: "invalid-argument",
    names: /gpuUuid "MIG-/,
  },
  { why: "a MIG atom", op: "gpu.reset", args: { gpuUuid: MIG }, code: "invalid-argument", names: /gpuUuid/ },
  {
    why: "dcgmi level 0",
    op: "dcgm.diag",
    args: { level: 0, gpuUuids: [] },
    code: "invalid-argument",
    names: /level 0/,
  },
  {
    why: "dcgmi level 5",
    op: "dcgm.diag",
    args: { level: 5, gpuUuids: [] },
    code: "invalid-argument",
    names: /level 5/,
  },
  {
    why: "an option for dcgmi in place of a GPU",
    op: "dcgm.diag",
    args: { level: 1, gpuUuids: ["-c/etc/evil"] },
    code: "invalid-argument",
    names: /gpuUuids "-c\/etc\/evil"/,
  },
  {
    why: "a MIG device for dcgmi",
    op: "dcgm.diag",
    args: { level: 2, gpuUuids: [MIG] },
    code: "invalid-argument",
    names: /gpuUuids/,
  },
  {
    why: "a dcgmi path",
    op: "dcgm.diag",
    args: { level: 1, gpuUuids: [], binary: "/tmp/x" },
    code: "unknown-field",
    names: /binary/,
  },
  {
    why: "an option for nvidia-smi",
    op: "gpu.reset",
    args: { gpuUuid: "--help" },
    code: "invalid-argument",
    names: /gpuUuid "--help"/,
  },
  {
    why: "an index, not a UUID",
    op: "gpu.reset",
    args: { gpuUuid: "0" },
    code: "invalid-argument",
    names: /gpuUuid "0"/,
  },
  {
    why: "a PCI bus id that is a path",
    op: "pci.numa_node",
    args: { pciBusId: "../../../etc" },
    code: "invalid-argument",
    names: /pciBusId/,
  },
  // reboot
  {
    why: "a reason on two lines",
    op: "node.reboot",
    args: { reason: "a\nb" },
    code: "invalid-argument",
    names: /reason/,
  },
  {
    why: "a reason of 513 characters",
    op: "node.reboot",
    args: { reason: "r".repeat(513) },
    code: "invalid-argument",
    names: /reason/,
  },
  // shapes
  { why: "args that are a list", op: "holds.list", args: [], code: "invalid-argument", names: /args is not an object/ },
  {
    why: "args that are a string",
    op: "file.remove",
    args: "cdi a1",
    code: "invalid-argument",
    names: /args is not an object/,
  },
  // disk ops: a by-id name, never a path or a kernel name
  {
    why: "a device path as the disk",
    op: "disk.wipe",
    args: { diskId: "/dev/sda", pattern: "zero", verify: "sample" },
    code: "invalid-argument",
    names: /diskId "\/dev\/sda" is not a \/dev\/disk\/by-id name/,
  },
  {
    why: "a by-id name climbing out of its directory",
    op: "disk.wipe_cancel",
    args: { diskId: "../../sda" },
    code: "invalid-argument",
    names: /diskId "..\/..\/sda"/,
  },
  {
    why: "a path field beside the id",
    op: "disk.wipe",
    args: { diskId: "wwn-0x5000c500a1b2c3d4", pattern: "zero", verify: "sample", path: "/dev/sda" },
    code: "unknown-field",
    names: /args\.path/,
  },
  {
    why: "an overwrite pattern bcd does not write",
    op: "disk.wipe",
    args: { diskId: "wwn-0x5000c500a1b2c3d4", pattern: "ones", verify: "sample" },
    code: "invalid-argument",
    names: /pattern "ones"/,
  },
  {
    why: "a method that is not a ladder rung",
    op: "disk.wipe",
    args: { diskId: "wwn-0x5000c500a1b2c3d4", pattern: "zero", verify: "all", only: "dd" },
    code: "invalid-argument",
    names: /only "dd" is not a wipe method/,
  },
  {
    why: "an image over plain http",
    op: "disk.deploy",
    args: {
      diskId: "wwn-0x5000c500a1b2c3d4",
      url: "http://images.example/os.raw",
      sha256: "ab".repeat(32),
      format: "raw",
    },
    code: "invalid-argument",
    names: /url "http:\/\/images.example\/os.raw" is not an https URL/,
  },
  {
    why: "a digest in upper case or short",
    op: "disk.deploy",
    args: { diskId: "wwn-0x5000c500a1b2c3d4", url: "https://i.example/os.raw", sha256: "AB".repeat(32), format: "raw" },
    code: "invalid-argument",
    names: /sha256 "ABAB/,
  },
  {
    why: "a kexec kernel path with ..",
    op: "kexec.load",
    args: { source: "disk", diskId: "wwn-0x5000c500a1b2c3d4", kernel: "/boot/../../etc/shadow", cmdline: "ro" },
    code: "invalid-argument",
    names: /kernel "\/boot\/..\/..\/etc\/shadow" is not an absolute path/,
  },
  {
    why: "a kexec command line with a newline",
    op: "kexec.load",
    args: { source: "disk", diskId: "wwn-0x5000c500a1b2c3d4", kernel: "/boot/vmlinuz", cmdline: "ro\ninit=/bin/sh" },
    code: "invalid-argument",
    names: /cmdline "ro\\ninit=\/bin\/sh" is not printable ASCII/,
  },
  {
    why: "a kexec kernel URL without its digest",
    op: "kexec.load",
    args: { source: "url", kernel: "https://i.example/vmlinuz", cmdline: "ro" },
    code: "invalid-argument",
    names: /kernelSha256 undefined is not a SHA-256/,
  },
  {
    why: "a kexec initrd over http",
    op: "kexec.load",
    args: {
      source: "url",
      kernel: "https://i.example/vmlinuz",
      kernelSha256: "ab".repeat(32),
      initrd: "http://i.example/initrd",
      initrdSha256: "ab".repeat(32),
      cmdline: "ro",
    },
    code: "invalid-argument",
    names: /initrd "http:\/\/i.example\/initrd" is not an https URL/,
  },
  {
    why: "a kexec from a disk named by path",
    op: "kexec.load",
    args: { source: "disk", diskId: "/dev/sda", kernel: "/boot/vmlinuz", cmdline: "ro" },
    code: "invalid-argument",
    names: /diskId "\/dev\/sda" is not a \/dev\/disk\/by-id name/,
  },
  {
    why: "kexec.exec with an argument",
    op: "kexec.exec",
    args: { cmdline: "init=/bin/sh" },
    code: "unknown-field",
    names: /unknown field args.cmdline/,
  },
  {
    why: "a format bcd does not convert (vmdk)",
    op: "disk.deploy",
    args: {
      diskId: "wwn-0x5000c500a1b2c3d4",
      url: "https://i.example/os.vmdk",
      sha256: "ab".repeat(32),
      format: "vmdk",
    },
    code: "invalid-argument",
    names: /format "vmdk" is not raw or qcow2/,
  },
  {
    why: "a verification that is neither sampled nor whole",
    op: "disk.wipe_status",
    args: { diskId: "wwn-0x5000c500a1b2c3d4", verify: "none" },
    code: "unknown-field",
    names: /args\.verify/,
  },
];

Deno.test("checkArgs refuses, by name, every argument outside the table before anything runs", async (t) => {
  for (const r of REFUSED) {
    await t.step(`${r.op}: ${r.why}`, () => {
      assert.throws(() => checkArgs(r.op, r.args), (e) => {
        assert.ok(e instanceof HelperError, String(e));
        assert.equal(e.code, r.code, e.message);
        assert.match(e.message, /^helper: /);
        assert.ok(e.message.includes(r.op), `the message names the op: ${e.message}`);
        assert.match(e.message, r.names);
        return true;
      });
    });
  }
});
