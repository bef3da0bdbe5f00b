/**
 * The node↔helper protocol (000 §privilege separation): NDJSON over a unix stream socket, one request or answer per
 * line. The unprivileged `bcd node` asks; the root `bcd helper` checks every argument itself, builds every path itself
 * and answers.
 *
 * | line     | shape                                                                 |
 * | -------- | --------------------------------------------------------------------- |
 * | request  | `{"id": <integer ≥ 0>, "op": "<op>", "args": {…}}` (`args` may be omitted when empty) |
 * | answer   | `{"id": <id>, "ok": true, "result": {…}}`                             |
 * | refusal  | `{"id": <id or null>, "ok": false, "error": {"code": "<code>", "message": "…"}}` |
 *
 * A request line is at most {@link MAX_REQUEST_LINE} bytes and an answer line {@link MAX_ANSWER_LINE}; a longer line
 * is refused as soon as the cap is passed, without buffering the rest, and the connection is closed. Answers may come
 * out of order: the node matches them by id.
 *
 * This file owns the wire: the line shapes above ({@link HelperRequest}, {@link HelperAnswer}), the op list, and each
 * op's arguments and result ({@link HelperArgs}, {@link HelperResults}), with the wire-only shapes (a hold's devices
 * as sent, the two `file.write` forms). The node's client (`runtimes/helper/client.ts`) types every call by them and
 * the root server's runners can only answer through `runtimes/helper/answer.ts`, which checks each result against
 * `HelperResults` for its op; so both halves meet in one declaration.
 *
 * A judgement call, written down: a payload that is a port's own value (the host inventory, a hold listing, a net
 * policy and its rule counts, a host unit's observed state and steps) is imported from the port's module, not copied
 * here. The node hands what the helper answers to the port unchanged, so one declaration keeps the two equal, where a
 * copy would be a second one to keep in step. The dependency points one way: nothing those modules import reaches
 * back into `core/helper` (`fixtures/structure/import_graph_test.ts` fails on any module or folder cycle).
 *
 * @module
 */
import type { HoldListing, SliceRemoval } from "../converge/devices/ports.ts";
import type { DcgmLevel, DcgmRun } from "../converge/devices/diag_dcgm.ts";
import type { HostMemory } from "../converge/devices/admission.ts";
import type { HostPressure } from "../balloon/policy.ts";
import type { HostFacts } from "../doctor/host_facts.ts";
import type { ReleaseState } from "../daemon/ports.ts";
import type { HoldBinding } from "../converge/devices/assignment.ts";
import type { DeviceClass } from "../converge/devices/classes.ts";
import type { SliceSettings } from "../converge/devices/slice.ts";
import type { HostInventory } from "../commands/kind_handlers/inventory_refresh.ts";
import type { KexecLoadAnswer, KexecLoadArgs } from "../commands/kind_handlers/boot_kexec.ts";
import type { RuleCounts } from "../netpolicy/counts.ts";
import type { NetPolicy } from "../netpolicy/policy.ts";
import type { HugepageObserved, HugepageStep } from "../host/hugepages.ts";
import type {
  KernelModulesApplied,
  KubernetesApplied,
  MigApplied,
  PackageApplied,
  PoolResult,
  SharingApplied,
} from "../host/ports.ts";
import type { KubeJoin, KubernetesObserved } from "../host/kubernetes_join.ts";
import type { SharingObserved, SharingStep } from "../host/gpu_sharing.ts";
import type { MigObserved, MigStep } from "../host/mig_layout.ts";
import type { PackageObserved, PackageStep, PackageUnit } from "../host/packages.ts";
import type { KernelModulesObserved, KernelModuleStep } from "../host/kernel_modules.ts";
import type { SysctlObserved, SysctlStep } from "../host/sysctl.ts";
import type { LibvirtArgs, LibvirtResults } from "./args_libvirt.ts";
import type { ChArgs, ChResults } from "./args_ch.ts";
import { CH_OPS, LIBVIRT_OPS } from "./ops_vm.ts";
import type { AccessApplied, AccessFiles, AccessObserved } from "../access/mod.ts";
import type { PluginFailure, PluginManifest } from "../plugins/protocol.ts";
import type { DiskDeployAnswer, DiskWipeAnswer, VerifyMode, WipeMethod, WipeProgress } from "../disks/mod.ts";

/** The protocol's version, printed by `version` under `protocols.helper`. */
export const HELPER_PROTOCOL_VERSION = 1;

/** Where the helper listens and the node connects when `[helper] socket` is unset. */
export const DEFAULT_HELPER_SOCKET = "/run/bcd/helper.sock";

/** The longest request line the helper reads (a CDI write of 1024 devices with long env lines fits). */
export const MAX_REQUEST_LINE = 1024 * 1024;

/** The longest answer line the node reads (the host inventory and the CDI read-back of many holds fit). */
export const MAX_ANSWER_LINE = 16 * 1024 * 1024;

/** Every operation, in the order the docs list them. */
export const HELPER_OPS = [
  "host.boot_id",
  "host.inventory",
  "host.memory",
  "host.memory_pressure",
  "host.doctor",
  "pci.numa_node",
  "holds.list",
  "file.write",
  "file.remove",
  "slice.apply",
  "slice.remove",
  "slice.list",
  "slice.usage",
  "gpu.reset",
  "dcgm.diag",
  "node.reboot",
  "nft.apply",
  "nft.list",
  "sysctl.read",
  "sysctl.apply",
  "hugepages.read",
  "hugepages.apply",
  "modules.read",
  "modules.apply",
  "package.read",
  "package.apply",
  "mig.read",
  "mig.apply",
  "sharing.read",
  "sharing.apply",
  "kube.read",
  "kube.join",
  "kube.reset",
  "plugin.list",
  "plugin.manifest",
  "plugin.attach",
  ...LIBVIRT_OPS,
  ...CH_OPS,
  "access.observe",
  "access.apply",
  "daemon.status",
  "daemon.install",
  "daemon.confirm",
  "disk.wipe",
  "disk.wipe_status",
  "disk.wipe_cancel",
  "disk.deploy",
  "kexec.load",
  "kexec.exec",
] as const;

/** An operation name. */
export type HelperOp = typeof HELPER_OPS[number];

/** Whether `s` names an operation. */
export function isHelperOp(s: string): s is HelperOp {
  return (HELPER_OPS as readonly string[]).includes(s);
}

/** The two kinds of file the node may ask for: the hold's CDI spec and its env file. */
export type FileKind = "cdi" | "allocation-env";

/** The file kinds, as the seed names them. */
export const FILE_KINDS: readonly FileKind[] = ["cdi", "allocation-env"];

/** A device of a CDI spec, as the node sends it (the helper renders the spec itself). */
export interface WireHoldDevice {
  readonly class: DeviceClass;
  readonly atom: string;
  readonly gpuUuid: string;
  readonly cdiName: string;
  readonly minorNumber?: number;
}

/** `file.write` of kind `cdi`: the hold, from which root renders `<cdi dir>/bcd-<allocation id>.json`. */
export interface CdiWriteArgs {
  readonly kind: "cdi";
  readonly allocationId: string;
  readonly binding: HoldBinding;
  readonly devices: readonly WireHoldDevice[];
  readonly env: readonly string[];
  readonly cgroupParent?: string;
}

/** `file.write` of kind `allocation-env`: the lines of `<run dir>/allocations/<allocation id>.env`. */
export interface EnvWriteArgs {
  readonly kind: "allocation-env";
  readonly allocationId: string;
  readonly env: readonly string[];
}

/** Each operation's arguments, after the helper checked them. */
export interface HelperArgs extends LibvirtArgs, ChArgs {
  "host.boot_id": Record<never, never>;
  "host.inventory": Record<never, never>;
  "host.memory": Record<never, never>;
  "host.memory_pressure": Record<never, never>;
  "host.doctor": Record<never, never>;
  "pci.numa_node": { readonly pciBusId: string };
  "holds.list": Record<never, never>;
  "file.write": CdiWriteArgs | EnvWriteArgs;
  "file.remove": { readonly kind: FileKind; readonly allocationId: string };
  "slice.apply": { readonly name: string; readonly settings: SliceSettings };
  "slice.remove": { readonly name: string };
  "slice.list": Record<never, never>;
  "slice.usage": { readonly name: string };
  "gpu.reset": { readonly gpuUuid: string };
  /** `dcgmi diag -r level -j` on these GPUs (every GPU when empty). */
  "dcgm.diag": { readonly level: DcgmLevel; readonly gpuUuids: readonly string[] };
  "node.reboot": { readonly reason: string };
  "nft.apply": { readonly policy: NetPolicy };
  "nft.list": Record<never, never>;
  "sysctl.read": { readonly keys: readonly string[] };
  "sysctl.apply": { readonly steps: readonly SysctlStep[] };
  "hugepages.read": Record<never, never>;
  "hugepages.apply": { readonly steps: readonly HugepageStep[] };
  "modules.read": Record<never, never>;
  "modules.apply": { readonly steps: readonly KernelModuleStep[] };
  "package.read": { readonly unit: PackageUnit; readonly package: string };
  "package.apply": { readonly unit: PackageUnit; readonly package: string; readonly steps: readonly PackageStep[] };
  "mig.read": Record<never, never>;
  "mig.apply": { readonly steps: readonly MigStep[] };
  "sharing.read": Record<never, never>;
  "sharing.apply": { readonly steps: readonly SharingStep[] };
  "kube.read": Record<never, never>;
  /** The join's settings and the bootstrap token (never logged: `log_args.ts`). */
  "kube.join": KubeJoin & { readonly token: string };
  "kube.reset": Record<never, never>;
  "plugin.list": Record<never, never>;
  "plugin.manifest": { readonly name: string };
  /** Starts the plugin; the connection then carries its frames (`runtimes/helper/plugin_relay.ts`). */
  "plugin.attach": { readonly name: string };
  "access.observe": Record<never, never>;
  "access.apply": AccessFiles;
  "daemon.status": Record<never, never>;
  /** Install the staged release of `sha256` (the helper builds its path) as `version`; `signature` base64. */
  "daemon.install": { readonly version: string; readonly sha256: string; readonly signature: string };
  "daemon.confirm": { readonly version: string };
  /** Wipe the disk with this by-id name down the ladder (or only `only`), verified by reading back. */
  "disk.wipe": {
    readonly diskId: string;
    readonly pattern: "zero" | "random";
    readonly verify: VerifyMode;
    readonly only?: WipeMethod;
  };
  "disk.wipe_status": { readonly diskId: string };
  "disk.wipe_cancel": { readonly diskId: string };
  /** Stream the raw image at `url` (https) onto the disk, checked against `sha256`, and verify it by reading back. */
  "disk.deploy": {
    readonly diskId: string;
    readonly url: string;
    readonly sha256: string;
    readonly format: "raw" | "qcow2";
    /** Grow the last partition (and an ext filesystem in it) to fill the disk. */
    readonly growRoot?: boolean;
    /** A NoCloud config drive added at the disk's end; `userData` in base64. */
    readonly configDrive?: { readonly metaData: string; readonly userData: string; readonly networkConfig?: string };
  };
  /** Load a kernel for `kexec -e`: from the deployed disk's filesystem or from https URLs (`args_kexec.ts`). */
  "kexec.load": KexecLoadArgs;
  /** Jump into the loaded kernel (answers first; the process ends with the machine's boot). */
  "kexec.exec": Record<never, never>;
}

export type { KexecLoadAnswer, KexecLoadArgs };

/** Each operation's result. */
export interface HelperResults extends LibvirtResults, ChResults {
  "host.boot_id": { readonly bootId: string };
  "host.inventory": HostInventory;
  "host.memory": HostMemory;
  /** `MemTotal`, `MemAvailable` and PSI's `some avg10` (`null` without PSI), for the balloon loop. */
  "host.memory_pressure": HostPressure;
  /** What `doctor` needs of the host that only root sees (`core/doctor/host_facts.ts`). */
  "host.doctor": HostFacts;
  /** `null`: sysfs names no NUMA node (absent, or -1). */
  "pci.numa_node": { readonly numaNode: number | null };
  "holds.list": HoldListing;
  "file.write": Record<never, never>;
  "file.remove": Record<never, never>;
  "slice.apply": Record<never, never>;
  "slice.remove": { readonly removal: SliceRemoval };
  "slice.list": { readonly names: readonly string[] };
  "slice.usage": { readonly usage: { readonly bytes2MB: number; readonly bytes1GB: number } | null };
  "gpu.reset": Record<never, never>;
  /** dcgmi's exit status, document and GPU id map; `null` when dcgmi is not installed. */
  "dcgm.diag": { readonly run: DcgmRun | null };
  "node.reboot": Record<never, never>;
  /** The figures of the ruleset root rendered and loaded. */
  "nft.apply": { readonly counts: RuleCounts };
  /** The figures of bcd's tables as the kernel holds them; a missing table is absent. */
  "nft.list": { readonly counts: RuleCounts };
  /** The live values (`null`: no such key) and the keys bcd's file manages. */
  "sysctl.read": SysctlObserved;
  /** The live values read back after the steps. */
  "sysctl.apply": { readonly live: Readonly<Record<string, string | null>> };
  "hugepages.read": HugepageObserved;
  /** Each set pool read back. */
  "hugepages.apply": { readonly pools: readonly PoolResult[] };
  /** The loaded modules and bcd's records of the modules it manages. */
  "modules.read": KernelModulesObserved;
  /** The loaded modules after the steps, and modprobe's words for each that failed. */
  "modules.apply": KernelModulesApplied;
  /** The package's installed version, the running driver (`nvidia-driver`), the unit's service. */
  "package.read": PackageObserved;
  /** The same after the steps, and the tool's words when one failed. */
  "package.apply": PackageApplied;
  /** Each GPU's MIG mode and GPU instances, and the instances bcd made. */
  "mig.read": MigObserved;
  /** The same after the steps, and nvidia-smi's words when one failed. */
  "mig.apply": MigApplied;
  /** The compute modes, the MPS daemon, and what bcd changed. */
  "sharing.read": SharingObserved;
  /** The same after the steps, and the tool's words when one failed. */
  "sharing.apply": SharingApplied;
  /** The endpoint the kubelet is joined to and the one bcd's record names. */
  "kube.read": KubernetesObserved;
  /** The same after `kubeadm join`, and kubeadm's words (the token scrubbed) when it failed. */
  "kube.join": KubernetesApplied;
  /** The same after the reset (or after only the record was dropped). */
  "kube.reset": KubernetesApplied;
  /** The manifests of the helper's plugin directory (those that parse). */
  "plugin.list": { readonly plugins: readonly PluginManifest[] };
  /** The plugin's manifest, or why there is none to use. */
  "plugin.manifest": PluginAnswer<{ readonly manifest: PluginManifest }>;
  /** The plugin started and attached to this connection, or why not. */
  "plugin.attach": PluginAnswer<{ readonly attached: { readonly name: string; readonly version: string } }>;
  "access.observe": AccessObserved;
  "access.apply": AccessApplied;
  /** The releases the helper keeps, a pending swap, the last rollback. */
  "daemon.status": ReleaseState;
  /** Installed (the helper restarts the agent now), or refused with the reason. */
  "daemon.install": { readonly installed: true } | {
    readonly refused: { readonly reason: string; readonly message: string };
  };
  "daemon.confirm": { readonly confirmed: boolean };
  /** The attested outcome, or root's refusal of the disk or the wipe's own, as data (`core/disks/wipe_answer.ts`). */
  "disk.wipe": DiskWipeAnswer;
  /** Where the disk's running wipe stands; `null` when none runs. */
  "disk.wipe_status": { readonly progress: WipeProgress | null };
  /** Whether a running wipe was told to stop (it stops between chunks and answers `cancelled`). */
  "disk.wipe_cancel": { readonly cancelled: boolean };
  /** What was written and verified, or why not and whether the boot area was zeroed (`core/disks/wipe_answer.ts`). */
  "disk.deploy": DiskDeployAnswer;
  "kexec.load": KexecLoadAnswer;
  /** `kexec -e` runs once this answer is written. */
  "kexec.exec": { readonly executing: true };
}

/** A plugin op's answer: what was asked, or the plugin contract's refusal (`core/plugins/README.md`). */
export type PluginAnswer<T> = T | { readonly refused: { readonly reason: PluginFailure; readonly message: string } };

/** A checked request: the closed union the helper dispatches on. */
export type HelperRequest = { [O in HelperOp]: { readonly id: number; readonly op: O; readonly args: HelperArgs[O] } }[
  HelperOp
];

/** An answer line, decoded. */
export type HelperAnswer =
  | { readonly id: number; readonly ok: true; readonly result: unknown }
  | {
    readonly id: number | null;
    readonly ok: false;
    readonly error: { readonly code: string; readonly message: string };
  };
