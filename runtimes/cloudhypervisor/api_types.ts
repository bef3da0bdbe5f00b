/**
 * The JSON shapes of cloud-hypervisor's REST API that bcd sends and reads, named and spelled as its published OpenAPI
 * document (`vmm/src/api/openapi/cloud-hypervisor.yaml`, API 0.3.0) spells them. Only the fields bcd uses are typed;
 * a configuration read back (`vm.info`, a snapshot's `config.json`) may carry more, which the index signatures keep.
 *
 * @module
 */

/** `VmState`. */
export type VmState = "Created" | "Running" | "Shutdown" | "Paused" | "BreakPoint";

/** The states, in the document's order. */
export const VM_STATES: readonly VmState[] = ["Created", "Running", "Shutdown", "Paused", "BreakPoint"];

/** `CpuAffinity`. */
export interface CpuAffinity {
  readonly vcpu: number;
  readonly host_cpus: readonly number[];
}

/** `CpusConfig`. */
export interface CpusConfig {
  readonly boot_vcpus: number;
  readonly max_vcpus: number;
  readonly affinity?: readonly CpuAffinity[];
  readonly [key: string]: unknown;
}

/** `MemoryConfig`. */
export interface MemoryConfig {
  readonly size: number;
  readonly hugepages?: boolean;
  readonly hugepage_size?: number;
  readonly shared?: boolean;
  readonly [key: string]: unknown;
}

/** `PayloadConfig`. */
export interface PayloadConfig {
  readonly firmware?: string;
  readonly kernel?: string;
  readonly cmdline?: string;
  readonly initramfs?: string;
}

/** `ImageType`. */
export type ImageType = "FixedVhd" | "Qcow2" | "Raw" | "Vhdx" | "Unknown";

/** `DiskConfig`. */
export interface DiskConfig {
  readonly path?: string;
  readonly readonly?: boolean;
  readonly id?: string;
  readonly serial?: string;
  readonly image_type?: ImageType;
  readonly backing_files?: boolean;
  readonly [key: string]: unknown;
}

/** `NetConfig` (bcd never names a `tap`: the VMM gets the tap's fd over `SCM_RIGHTS`). */
export interface NetConfig {
  readonly mac?: string;
  readonly id?: string;
  readonly num_queues?: number;
  readonly tap?: string;
  readonly [key: string]: unknown;
}

/** `BalloonConfig`. */
export interface BalloonConfig {
  readonly size: number;
  readonly free_page_reporting?: boolean;
  readonly deflate_on_oom?: boolean;
  readonly [key: string]: unknown;
}

/** `ConsoleMode`. */
export type ConsoleMode = "Off" | "Pty" | "Tty" | "File" | "Socket" | "Null";

/** `DeviceConfig` (a VFIO device by its sysfs path). */
export interface DeviceConfig {
  readonly path: string;
  readonly id?: string;
  readonly [key: string]: unknown;
}

/** `VmConfig`. */
export interface VmConfig {
  readonly cpus?: CpusConfig;
  readonly memory?: MemoryConfig;
  readonly payload: PayloadConfig;
  readonly disks?: readonly DiskConfig[];
  readonly net?: readonly NetConfig[];
  readonly rng?: { readonly src: string; readonly [key: string]: unknown };
  readonly balloon?: BalloonConfig;
  readonly serial?: { readonly mode: ConsoleMode; readonly socket?: string; readonly file?: string };
  readonly console?: { readonly mode: ConsoleMode; readonly socket?: string; readonly file?: string };
  readonly devices?: readonly DeviceConfig[];
  readonly platform?: { readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

/** `VmInfo`. */
export interface VmInfo {
  readonly config: VmConfig;
  readonly state: VmState;
  readonly memory_actual_size?: number;
  readonly device_tree?: { readonly [id: string]: unknown };
}

/** `VmmPingResponse`. */
export interface VmmPingResponse {
  readonly version: string;
  readonly build_version?: string;
  readonly pid?: number;
  readonly features?: readonly string[];
}

/** `PciDeviceInfo`: what a hot add answers. */
export interface PciDeviceInfo {
  readonly id: string;
  readonly bdf: string;
}

/** `VmResize`. */
export interface VmResize {
  readonly desired_vcpus?: number;
  readonly desired_ram?: number;
  readonly desired_balloon?: number;
}

/** `VmResizeDisk`. */
export interface VmResizeDisk {
  readonly id: string;
  readonly desired_size: number;
}

/** `RestoredNetConfig` of `RestoreConfig.net_fds` (in cloud-hypervisor's `config.rs`; the document omits it). */
export interface RestoredNetConfig {
  readonly id: string;
  readonly num_fds: number;
}

/** `RestoreConfig`. */
export interface RestoreConfig {
  readonly source_url: string;
  readonly prefault?: boolean;
  readonly resume?: boolean;
  readonly net_fds?: readonly RestoredNetConfig[];
}

/** The files cloud-hypervisor's snapshot writes into its destination directory. */
export const SNAPSHOT_FILES = ["config.json", "state.json", "memory-ranges"] as const;
