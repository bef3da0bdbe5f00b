/**
 * What the host units reach the host through: narrow ports the node implements over the root helper
 * (`runtimes/helper/ports_host.ts`) and tests implement over temp roots or fakes. No port takes a path.
 *
 * @module
 */
import type { HugepageObserved, HugepageSize, HugepageStep } from "./hugepages.ts";
import type { KernelModulesObserved, KernelModuleStep } from "./kernel_modules.ts";
import type { PackageObserved, PackageStep, PackageUnit } from "./packages.ts";
import type { MigObserved, MigStep } from "./mig_layout.ts";
import type { SharingObserved, SharingStep } from "./gpu_sharing.ts";
import type { SysctlObserved, SysctlStep } from "./sysctl.ts";
import type { KubeJoin, KubernetesObserved } from "./kubernetes_join.ts";

/** The sysctl file and live values. */
export interface SysctlPort {
  /** The live values of `keys` and of every key bcd manages, and the managed keys with their originals. */
  read(keys: readonly string[]): Promise<SysctlObserved>;
  /** Carries out the steps (file first for a set, live first for a restore); the live values read back. */
  apply(steps: readonly SysctlStep[]): Promise<Readonly<Record<string, string | null>>>;
}

/** What a pool came to after a set. */
export interface PoolResult {
  readonly size: HugepageSize;
  readonly node?: number;
  readonly wanted: number;
  /** The pool's count read back. */
  readonly total: number;
}

/** The huge page pools. */
export interface HugepagePort {
  read(): Promise<HugepageObserved>;
  /** Carries out the steps; the set pools read back. */
  apply(steps: readonly HugepageStep[]): Promise<readonly PoolResult[]>;
}

/** The kernel's modules and bcd's files for them (`/etc/modules-load.d/bcd.conf`, `/etc/modprobe.d/bcd.conf`). */
export interface KernelModulesPort {
  read(): Promise<KernelModulesObserved>;
  /**
   * Carries out the steps in order: a load persists first (recording whether bcd loads it), then runs modprobe when
   * the module is not loaded; a drop unloads first (only when the step says so), then leaves the files — unless the
   * unload failed, when the record stays for the next pass. A modprobe that fails is not an error here: the result
   * says what is loaded, with modprobe's words for each failure.
   */
  apply(steps: readonly KernelModuleStep[]): Promise<KernelModulesApplied>;
}

/** What a {@link KernelModulesPort.apply} came to. */
export interface KernelModulesApplied {
  /** The loaded modules after the steps (`_` spelling). */
  readonly loaded: readonly string[];
  /** Module → modprobe's message, for each load or unload that failed. */
  readonly failures: Readonly<Record<string, string>>;
}

/** The package units' packages and services (`dpkg-query`, `apt-get`, `systemctl`, `nvidia-smi` for the driver). */
export interface PackagePort {
  /** What `unit`'s package `pkg` looks like on the host. */
  read(unit: PackageUnit, pkg: string): Promise<PackageObserved>;
  /**
   * Carries out the steps for `unit`'s package `pkg`, in order, stopping at the first that fails; what the host looks
   * like after, and the tool's words when a step failed.
   */
  apply(unit: PackageUnit, pkg: string, steps: readonly PackageStep[]): Promise<PackageApplied>;
}

/** What a {@link PackagePort.apply} came to. */
export interface PackageApplied {
  readonly observed: PackageObserved;
  readonly failure?: string;
}

/** The GPUs' MIG instances (`nvidia-smi mig`) and bcd's record of the GPU instances it made. */
export interface MigPort {
  read(): Promise<MigObserved>;
  /** Carries out the steps in order, stopping at the first that fails; the layout after, and nvidia-smi's words. */
  apply(steps: readonly MigStep[]): Promise<MigApplied>;
}

/** What a {@link MigPort.apply} came to. */
export interface MigApplied {
  readonly observed: MigObserved;
  readonly failure?: string;
}

/** The holds bound on the host now: each `gpu.mig` atom and whole GPU in use, and the hold using it. */
export type HoldUsers = () => Promise<ReadonlyMap<string, string>>;

/** The GPUs' compute modes and the MPS control daemon (`nvidia-smi -c`, `nvidia-cuda-mps-control`). */
export interface SharingPort {
  read(): Promise<SharingObserved>;
  /** Carries out the steps in order, stopping at the first that fails; the host after, and the tool's words. */
  apply(steps: readonly SharingStep[]): Promise<SharingApplied>;
}

/** What a {@link SharingPort.apply} came to. */
export interface SharingApplied {
  readonly observed: SharingObserved;
  readonly failure?: string;
}

/** The allocation ids of the bound `gpu.slot` holds (those MPS serves). */
export type SlotHolds = () => Promise<readonly string[]>;

/**
 * The kubelet's join (`kubeadm join`, `kubeadm reset -f`) and bcd's record of the join it made. The token travels
 * beside the join's settings and is never logged, never put in an argv, never kept.
 */
export interface KubernetesPort {
  read(): Promise<KubernetesObserved>;
  /** Records the endpoint, then runs the join; the host after, and kubeadm's words (the token scrubbed) on failure. */
  join(join: KubeJoin, token: string): Promise<KubernetesApplied>;
  /** Gives back bcd's join: `kubeadm reset -f` only when the kubelet is joined to the recorded endpoint; drops the record. */
  reset(): Promise<KubernetesApplied>;
}

/** What a {@link KubernetesPort} change came to. */
export interface KubernetesApplied {
  readonly observed: KubernetesObserved;
  readonly failure?: string;
}
