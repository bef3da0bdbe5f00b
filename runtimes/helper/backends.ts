/**
 * What the root helper does each operation with: the real runtimes on a host ({@link ./host_backends.ts}), temp roots
 * and fakes in tests. Every path is built here, from the helper's own configuration, never from a request.
 *
 * @module
 */
import type { ChHostPort } from "../../core/converge/instances/ch_port.ts";
import type { AccessHost } from "../../core/access/mod.ts";
import type { HostInventoryReader, Rebooter } from "../../core/commands/kind_handlers/mod.ts";
import type { HoldRecord } from "../../core/converge/devices/hold.ts";
import type { DcgmLevel, DcgmRun } from "../../core/converge/devices/diag_dcgm.ts";
import type { HoldListing, HostMemorySource, SliceManager } from "../../core/converge/devices/ports.ts";
import type { Nft } from "../../core/netpolicy/mod.ts";
import type { MemoryPressureSource } from "../../core/balloon/pressure.ts";
import type {
  HugepagePort,
  KernelModulesPort,
  KubernetesPort,
  MigPort,
  PackagePort,
  SharingPort,
  SysctlPort,
} from "../../core/host/mod.ts";
import type { HostDoctor } from "./doctor_facts.ts";
import type { DaemonBackend } from "../../core/daemon/ports.ts";
import type { LibvirtHostPort } from "../../core/converge/instances/domain_plan.ts";
import type { PluginSource } from "../../core/plugins/mod.ts";
import type { DiskWipes } from "../disks/disk_wipes.ts";
import type { DiskDeploys } from "../disks/disk_deploys.ts";
import type { KexecLoads } from "../disks/kexec_loads.ts";

/** The hold files, one at a time (the CDI/env store's halves: `runtimes/cdi`'s `CdiHoldStore`). */
export interface HoldFiles {
  list(): Promise<HoldListing>;
  /** Renders and writes `<cdi dir>/bcd-<allocation id>.json` atomically. */
  writeSpec(record: HoldRecord): Promise<unknown>;
  /** Writes `<env dir>/<allocation id>.env` atomically. */
  writeEnv(allocationId: string, env: readonly string[]): Promise<unknown>;
  /** Removes the spec; an absent one is not an error. */
  removeSpec(allocationId: string): Promise<unknown>;
  /** Removes the env file; an absent one is not an error. */
  removeEnv(allocationId: string): Promise<unknown>;
  /** The allocation ids that have a file of `kind` (for the helper's count limit). */
  fileIds(kind: "cdi" | "allocation-env"): Promise<ReadonlySet<string>>;
}

/** The helper's runtimes. */
export interface HelperBackends {
  /** The kernel's boot id (`/proc/sys/kernel/random/boot_id`). */
  bootId(): Promise<string>;
  readonly inventory: HostInventoryReader;
  readonly memory: HostMemorySource;
  /** `/proc/meminfo` and `/proc/pressure/memory` for the balloon loop (`host.memory_pressure`); absent, the op fails. */
  readonly pressure?: MemoryPressureSource;
  /** A PCI device's NUMA node from sysfs, `undefined` when none. */
  numaNode(pciBusId: string): Promise<number | undefined>;
  readonly holds: HoldFiles;
  readonly slices: SliceManager;
  /** `nvidia-smi --gpu-reset -i <uuid>`; throws with the tool's message. */
  gpuReset(gpuUuid: string): Promise<void>;
  /** `dcgmi diag -r <level> -j` on the GPUs (all when empty); `null` when dcgmi is not installed. */
  dcgmDiag(level: DcgmLevel, gpuUuids: readonly string[]): Promise<DcgmRun | null>;
  readonly rebooter: Rebooter;
  /** bcd's nftables tables: the real `nft` on a host (it renders the policy against the bridges' addresses). */
  readonly nft: Nft;
  /** The host section's sysctl unit: `/proc/sys` and `/etc/sysctl.d/90-bcd.conf`. */
  readonly sysctl: SysctlPort;
  /** The host section's hugepages unit: sysfs pools and bcd's record of them. */
  readonly hugepages: HugepagePort;
  /** The host section's kernel-modules unit: modprobe and bcd's files under `/etc`. */
  readonly modules: KernelModulesPort;
  /** The package units: dpkg-query, apt-get, systemctl, and nvidia-smi for the running driver. */
  readonly packages: PackagePort;
  /** The mig-layout unit: `nvidia-smi mig` and bcd's record of the GPU instances it made. */
  readonly mig: MigPort;
  /** The gpu-sharing unit: compute modes and the MPS control daemon. */
  readonly sharing: SharingPort;
  /** The kubernetes-join unit: `kubeadm join`/`reset` and bcd's record of the join it made. */
  readonly kubernetes: KubernetesPort;
  /** The driver plugins of the helper's directory, started under their own user (`plugin.*`). */
  readonly plugins: PluginSource;
  /** The `libvirt-kvm` runtime's root half (`runtimes/libvirt/libvirt_host.ts`); absent where virsh is not installed. */
  readonly libvirt?: LibvirtHostPort;
  /** The `cloud-hypervisor` runtime's root half (`runtimes/cloudhypervisor/ch_host.ts`); absent without the binary. */
  readonly ch?: ChHostPort;
  /** sshd's access files (`access.*`); absent where the helper is not configured for them (the ops then fail). */
  readonly access?: AccessHost;
  /** What `doctor` asks of the host (`host.doctor`); absent, the op fails. */
  readonly doctor?: HostDoctor;
  /** The self-update's root half (`daemon.*`); absent, the ops fail. */
  readonly daemon?: DaemonBackend;
  /** The wipes of `disk.wipe*` (the ramdisk's helper); absent, the ops fail. */
  readonly disks?: DiskWipes;
  /** The deploys of `disk.deploy` (the ramdisk's helper); absent, the op fails. */
  readonly deploys?: DiskDeploys;
  /** `kexec.load`/`kexec.exec` (the ramdisk's helper); absent, the ops fail. */
  readonly kexec?: KexecLoads;
}
