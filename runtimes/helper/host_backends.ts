/**
 * The helper's real backends on a host, from its configuration: the CDI directory (`[devices] cdi_dir`) and the env
 * directory (`<[devices] run_dir>/allocations`), the slices (systemd's where it runs, cgroupfs under
 * `[devices] cgroup_root` otherwise), `nvidia-smi` (`[devices] nvidia_smi`) for resets, the sysfs inventory and
 * memory, the kernel's boot id, and the init system's reboot.
 *
 * @module
 */
import type { ResolvedAgentConfig } from "../../core/config/mod.ts";
import type { Rebooter } from "../../core/commands/kind_handlers/mod.ts";
import { readBootId } from "../../core/journal/boot_id.ts";
import { CdiHoldStore } from "../cdi/hold_store.ts";
import { CgroupfsSliceManager } from "../cgroup/cgroupfs.ts";
import { ProcHostMemory } from "../cgroup/host_memory.ts";
import { ProcMemoryPressure } from "../cgroup/memory_pressure.ts";
import { SystemdSliceManager } from "../cgroup/systemd.ts";
import { SysfsHostInventory } from "../host/inventory.ts";
import { InitRebooter } from "../host/rebooter.ts";
import { SysctlFiles } from "../host/sysctl_files.ts";
import { SysfsHugepages } from "../host/sysfs_hugepages.ts";
import { ModprobeModules } from "../host/modprobe_modules.ts";
import { AptPackages } from "../host/apt_packages.ts";
import { SmiMig } from "../host/smi_mig.ts";
import { MpsSharing } from "../host/mps_sharing.ts";
import { KubeadmJoin } from "../host/kubeadm_join.ts";
import { UserPluginSource } from "./plugin_user.ts";
import { RealNft } from "../nft/real_nft.ts";
import { NvidiaSmi, readPciNumaNode } from "../nvidia/nvidia_smi.ts";
import { Dcgmi } from "../nvidia/dcgmi.ts";
import type { HelperBackends } from "./backends.ts";
import type { Logger } from "../../core/log/mod.ts";
import { sshdAccessFiles } from "../access/sshd_files.ts";
import { DiskWipes } from "../disks/disk_wipes.ts";
import { DiskDeploys } from "../disks/disk_deploys.ts";
import { KexecLoads } from "../disks/kexec_loads.ts";
import { DiskClaims } from "../disks/disk_claims.ts";

/** Options of {@link hostBackends}. */
export interface HostBackendOptions {
  /** Where the boot id is read (default the kernel's). */
  readonly bootIdPath?: string;
  /** Whether systemd runs this host (default: `/run/systemd/system` is a directory). */
  readonly systemd?: boolean;
  readonly rebooter?: Rebooter;
  /** Where live sysctls are read and written (default `/proc/sys`). */
  readonly procSysRoot?: string;
  readonly log?: Logger;
}

/** Whether systemd runs this host (its runtime directory exists). */
export function systemdRuns(): boolean {
  try {
    return Deno.statSync("/run/systemd/system").isDirectory;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** The real backends for `config`. */
export function hostBackends(config: ResolvedAgentConfig, opts: HostBackendOptions = {}): HelperBackends {
  const d = config.devices;
  const smi = new NvidiaSmi({ binary: d.nvidiaSmi });
  const dcgmi = new Dcgmi({ nvidiaSmi: d.nvidiaSmi });
  const claims = new DiskClaims(); // one disk, one writer: shared by disk.wipe and disk.deploy
  return {
    bootId: () => readBootId(opts.bootIdPath),
    inventory: new SysfsHostInventory(),
    memory: new ProcHostMemory(),
    pressure: new ProcMemoryPressure(),
    numaNode: (pciBusId) => readPciNumaNode("/sys/bus/pci/devices", pciBusId),
    holds: new CdiHoldStore({ cdiDir: d.cdiDir, envDir: `${d.runDir}/allocations` }),
    slices: (opts.systemd ?? systemdRuns())
      ? new SystemdSliceManager({ cgroupRoot: d.cgroupRoot })
      : new CgroupfsSliceManager({ root: d.cgroupRoot }),
    gpuReset: (uuid) => smi.reset(uuid),
    dcgmDiag: (level, uuids) => dcgmi.diag(level, uuids),
    rebooter: opts.rebooter ?? new InitRebooter(),
    nft: new RealNft(),
    sysctl: new SysctlFiles({
      etc: config.host.etcRoot,
      ...(opts.procSysRoot !== undefined ? { procSys: opts.procSysRoot } : {}),
    }),
    hugepages: new SysfsHugepages({ etc: config.host.etcRoot, sys: config.host.sysRoot }),
    modules: new ModprobeModules({ etc: config.host.etcRoot }),
    packages: new AptPackages({ nvidiaSmi: d.nvidiaSmi }),
    mig: new SmiMig({ nvidiaSmi: d.nvidiaSmi, etc: config.host.etcRoot }),
    sharing: new MpsSharing({ nvidiaSmi: d.nvidiaSmi, etc: config.host.etcRoot }),
    kubernetes: new KubeadmJoin({ etc: config.host.etcRoot }),
    plugins: new UserPluginSource({ dir: config.plugins.dir, user: config.plugins.user }),
    access: sshdAccessFiles(config, opts.log),
    // Every role's helper has it; only the ramdisk's answers the disk ops (`core/helper/roles.ts`).
    disks: new DiskWipes({ claims, ...(opts.log ? { log: opts.log } : {}) }),
    deploys: new DiskDeploys({ claims, ...(opts.log ? { log: opts.log } : {}) }),
    kexec: new KexecLoads({ claims, ...(opts.log ? { log: opts.log } : {}) }),
  };
}

/** A group's id: a number as is, else its line in `/etc/group`. Throws `RangeError` for an unknown group. */
export async function groupId(group: string, groupFile = "/etc/group"): Promise<number> {
  if (/^\d{1,10}$/.test(group)) return Number(group);
  const text = await Deno.readTextFile(groupFile);
  for (const line of text.split("\n")) {
    const [name, , gid] = line.split(":");
    if (name === group && gid !== undefined && /^\d{1,10}$/.test(gid)) return Number(gid);
  }
  throw new RangeError(`group ${JSON.stringify(group)} is not in ${groupFile}`);
}
