/**
 * The GPU inventory the devices converger, `gpu.reset` and `diag.nvml` read: what `nvidia-smi -q -x` (plus
 * `nvidia-smi -L` for MIG UUIDs and sysfs for NUMA nodes) says about each GPU. Runtimes produce it; core only reads it.
 *
 * @module
 */

/** MIG mode as nvidia-smi reports it (`N/A` on GPUs without MIG). */
export type MigMode = "Enabled" | "Disabled" | "N/A";

/** One MIG device: a compute instance `ci` of GPU instance `gi`. */
export interface MigInstance {
  /** `MIG-…` UUID, the id the driver knows (from `nvidia-smi -L`); absent when it could not be read. */
  readonly uuid?: string;
  readonly gi: number;
  readonly ci: number;
  /** nvidia-smi's MIG device index on its GPU. */
  readonly index: number;
  /** Profile name such as `1g.10gb`, when known. */
  readonly profile?: string;
}

/** One GPU of the host. */
export interface GpuInfo {
  /** `GPU-…` UUID. */
  readonly uuid: string;
  /** PCI bus id as nvidia-smi writes it, e.g. `00000000:18:00.0`. */
  readonly pciBusId: string;
  /** `/dev/nvidia<minor>`. */
  readonly minorNumber?: number;
  /** NUMA node of the PCI device (sysfs `numa_node`; absent when -1 or unreadable). */
  readonly numaNode?: number;
  readonly productName?: string;
  readonly migMode: MigMode;
  readonly migPending?: MigMode;
  readonly migInstances: readonly MigInstance[];
  /** Volatile uncorrectable ECC errors (sum of the counters nvidia-smi reports); absent when N/A. */
  readonly eccVolatileUncorrectable?: number;
  /** Row remapping; absent on GPUs without a row remapper. */
  readonly remap?: { readonly pending: boolean; readonly failed: boolean };
  /** nvidia-smi's `gpu_reset_status/reset_required` (set after XIDs such as 79 or 48); absent when N/A. */
  readonly resetRequired?: boolean;
  /** nvidia-smi's `gpu_recovery_action` (`None`, `Reset`, `Reboot`, `Drain P2P`, `Drain and Reset`), when reported. */
  readonly recoveryAction?: string;
  /** GPU temperature in °C, when read. */
  readonly temperatureC?: number;
  /** Power draw in watts, when read. */
  readonly powerW?: number;
}

/** The host's GPUs. */
export interface GpuInventory {
  readonly driverVersion?: string;
  readonly cudaVersion?: string;
  readonly gpus: readonly GpuInfo[];
}

/**
 * What makes a GPU read unhealthy (000 §gpu.reset and live holds): uncorrectable volatile ECC errors, a pending or a
 * failed row remap. Empty when it reads healthy, or when the inventory carries neither counter.
 */
export function gpuProblems(gpu: GpuInfo): string[] {
  const out: string[] = [];
  if ((gpu.eccVolatileUncorrectable ?? 0) > 0) {
    out.push(`volatile uncorrectable ECC errors: ${gpu.eccVolatileUncorrectable}`);
  }
  if (gpu.remap?.pending) out.push("row remap pending");
  if (gpu.remap?.failed) out.push("row remap failed");
  return out;
}

/** {@link gpuProblems} as one message, or `undefined` when the GPU reads healthy. */
export function gpuUnhealthyReason(gpu: GpuInfo): string | undefined {
  const p = gpuProblems(gpu);
  return p.length ? p.join(", ") : undefined;
}

/** A GPU by UUID. */
export function findGpu(inv: GpuInventory, uuid: string): GpuInfo | undefined {
  return inv.gpus.find((g) => g.uuid === uuid);
}
