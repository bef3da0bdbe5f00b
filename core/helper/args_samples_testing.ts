/**
 * Test support: one accepted argument object per op ({@link VALID_ARGS}; the `libvirt.*` ones also alone), for the
 * protocol's op-by-op tables (`args_test.ts`, `codec_test.ts`, `roles_test.ts`).
 *
 * @module
 */
import type { LibvirtArgs, LibvirtOp } from "./args_libvirt.ts";
import type { ChArgs, ChOp } from "./args_ch.ts";
import type { HelperArgs, HelperOp } from "./protocol.ts";

/** A plan that passes every rule. */
export const SAMPLE_PLAN: LibvirtArgs["libvirt.define"]["plan"] = {
  id: "i-1",
  allocationId: "a1",
  vcpus: 2,
  memoryMiB: 1024,
  image: { sha256: "a".repeat(64), format: "qcow2" },
  nics: [{ mac: "52:54:00:12:34:56", bridge: "br0" }],
  gpus: [],
  placement: { cpus: "0-1", mems: "0", hugepages: "none", balloon: false },
  seed: true,
  restoredFrom: null,
};

/** One accepted request per libvirt op. */
export const LIBVIRT_VALID: { [O in LibvirtOp]: LibvirtArgs[O] } = {
  "libvirt.list": {},
  "libvirt.define": { plan: SAMPLE_PLAN },
  "libvirt.start": { id: "i-1", paused: false },
  "libvirt.suspend": { id: "i-1" },
  "libvirt.resume": { id: "i-1" },
  "libvirt.shutdown": { id: "i-1" },
  "libvirt.destroy": { id: "i-1" },
  "libvirt.undefine": { id: "i-1" },
  "libvirt.blockresize": { id: "i-1", bytes: 2 ** 33 },
  "libvirt.attach_disk": { id: "i-1", disk: { volume: { id: "vol-1", serial: "data", readOnly: false } } },
  "libvirt.detach_disk": { id: "i-1", disk: { rebind: true } },
  "libvirt.save": { id: "i-1" },
  "libvirt.restore": { id: "i-1", paused: true },
  "libvirt.setmem": { id: "i-1", kib: 1048576 },
  "libvirt.domstats": { id: "i-1" },
};

/** The same, as request-line argument JSON. */
export const LIBVIRT_LINES: { [O in LibvirtOp]: string } = Object.fromEntries(
  Object.entries(LIBVIRT_VALID).map(([k, v]) => [k, JSON.stringify(v)]),
) as { [O in LibvirtOp]: string };

/** One accepted request per ch op. */
export const CH_VALID: { [O in ChOp]: ChArgs[O] } = {
  "ch.taps": { id: "i-1" },
  "ch.untaps": { id: "i-1" },
  "ch.launch": { id: "i-1" },
  "ch.add_net": { id: "i-1", index: 1 },
  "ch.restore": { id: "i-1", resume: false },
  "ch.stop": { id: "i-1" },
  "ch.state": { id: "i-1" },
  "ch.vfio": { id: "i-1" },
  "ch.unvfio": { id: "i-1" },
  "ch.memory": { id: "i-1" },
};

/** The same as request argument lines. */
export const CH_LINES: { [O in ChOp]: string } = Object.fromEntries(
  Object.entries(CH_VALID).map(([k, v]) => [k, JSON.stringify(v)]),
) as { [O in ChOp]: string };

const GPU = "GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c";

/** One accepted request per op of the protocol (the args table's "what passes" column), shared by the args and codec tests. */
export const VALID_ARGS: { [O in HelperOp]: HelperArgs[O] } = {
  "host.boot_id": {},
  "host.inventory": {},
  "host.memory": {},
  "host.memory_pressure": {},
  "host.doctor": {},
  "daemon.status": {},
  "daemon.install": { version: "0.2.0", sha256: "a".repeat(64), signature: "" },
  "daemon.confirm": { version: "0.2.0" },
  "pci.numa_node": { pciBusId: "00000000:3A:00.0" },
  "holds.list": {},
  "file.write": {
    kind: "cdi",
    allocationId: "a1",
    binding: "hold",
    devices: [{ class: "gpu.slot", atom: `${GPU}/s2`, gpuUuid: GPU, cdiName: `${GPU}_s2`, minorNumber: 3 }],
    env: [`NVIDIA_VISIBLE_DEVICES=${GPU}`, "BCD_ALLOCATION_ID=a1", "BCD_CGROUP_PARENT=bcd-alloc-a1.slice"],
    cgroupParent: "bcd-alloc-a1.slice",
  },
  "file.remove": { kind: "cdi", allocationId: "a1" },
  "slice.apply": {
    name: "bcd-alloc-a1.slice",
    settings: { allowedCpus: "0-3", allowedMemoryNodes: "0", cpuQuotaPercent: 400, memoryMaxBytes: 2 ** 33 },
  },
  "slice.remove": { name: "bcd-alloc-a1.slice" },
  "slice.list": {},
  "slice.usage": { name: "bcd-alloc-a1.slice" },
  "gpu.reset": { gpuUuid: GPU },
  "dcgm.diag": { level: 3, gpuUuids: [GPU] },
  "node.reboot": { reason: "requested by op-17" },
  "nft.apply": {
    policy: {
      nics: [{
        instance: "i-1",
        index: 0,
        bridge: "br0",
        policy: "private",
        sshFromHostOnly: true,
        mac: "52:54:00:00:00:01",
        addresses: ["10.0.3.7/24"],
      }],
    },
  },
  "nft.list": {},
  "sysctl.read": { keys: ["net.ipv4.ip_forward"] },
  "sysctl.apply": {
    steps: [{ op: "set", key: "net.ipv4.ip_forward", value: "1" }, { op: "restore", key: "vm.swappiness" }],
  },
  "hugepages.read": {},
  "hugepages.apply": { steps: [{ op: "set", size: "2M", node: 0, count: 512 }, { op: "restore", size: "1G" }] },
  "modules.read": {},
  "mig.read": {},
  "sharing.read": {},
  "sharing.apply": { steps: [{ op: "restore-compute-mode", gpu: "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31" }] },
  "mig.apply": { steps: [{ op: "create", gpu: "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31", profile: "1g.10gb+me" }] },
  "package.read": { unit: "container-toolkit", package: "nvidia-container-toolkit" },
  "package.apply": {
    unit: "nvidia-driver",
    package: "nvidia-driver",
    steps: [{ op: "install", package: "nvidia-driver", version: "1:550.90.07-1" }],
  },
  "modules.apply": { steps: [{ op: "load", name: "br_netfilter" }, { op: "drop", name: "overlay", unload: true }] },
  "kube.read": {},
  "kube.join": {
    apiServerEndpoint: "10.0.0.1:6443",
    caCertHashes: [`sha256:${"0f".repeat(32)}`],
    nodeName: "gpu-17",
    labels: { "node.kubernetes.io/gpu": "h100" },
    taints: [{ key: "nvidia.com/gpu", value: "present", effect: "NoSchedule" }],
    token: "abcdef.0123456789abcdef",
  },
  "kube.reset": {},
  "plugin.list": {},
  "plugin.manifest": { name: "redfish" },
  "plugin.attach": { name: "redfish" },
  ...LIBVIRT_VALID,
  ...CH_VALID,
  "access.observe": {},
  "access.apply": {
    caKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"],
    principals: [{ account: "root", principals: ["root@n1"] }],
    revokedSerials: [5],
  },
  "disk.wipe": {
    diskId: "nvme-Samsung_SSD_980_1TB_S64DNX0R123456",
    pattern: "random",
    verify: "all",
    only: "blkdiscard",
  },
  "disk.wipe_status": { diskId: "wwn-0x5000c500a1b2c3d4" },
  "disk.wipe_cancel": { diskId: "ata-ST4000NM0035-1V4107_ZC1ABCDE" },
  "kexec.load": {
    source: "disk",
    diskId: "nvme-Samsung_SSD_980_1TB_S64DNX0R123456",
    kernel: "/boot/vmlinuz",
    initrd: "/boot/initrd.img",
    cmdline: "root=UUID=0b2c6a4e-1f3d-4e5a-9b8c-7d6e5f4a3b2c ro console=ttyS0",
  },
  "kexec.exec": {},
  "disk.deploy": {
    diskId: "nvme-Samsung_SSD_980_1TB_S64DNX0R123456",
    url: "https://images.example/ubuntu-24.04.qcow2?sig=abc",
    sha256: "0f".repeat(32),
    format: "qcow2",
    growRoot: true,
    configDrive: { metaData: "instance-id: i-1\n", userData: "I2Nsb3VkLWNvbmZpZwo=" },
  },
};
