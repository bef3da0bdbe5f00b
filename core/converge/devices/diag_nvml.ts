/**
 * The `diag.nvml` kind: control lane, retry-safe, attested (node and ramdisk roles). It reads a fresh inventory
 * and reports each GPU's identity, MIG layout and health, in a stable order and shape so the attested result's
 * SHA-256 is reproducible.
 *
 * @module
 */
import { type GpuInventory, gpuUnhealthyReason } from "./inventory.ts";
import type { GpuTool } from "./ports.ts";

/** One GPU in the `diag.nvml` result. */
export interface DiagGpu {
  readonly gpu_uuid: string;
  readonly pci_bus_id: string;
  readonly numa_node: number | null;
  readonly product_name: string;
  readonly mig_mode: string;
  readonly mig_instances: readonly { readonly uuid: string | null; readonly gi: number; readonly ci: number }[];
  readonly ecc_volatile_uncorrectable: number | null;
  readonly remap_pending: boolean | null;
  readonly remap_failed: boolean | null;
  readonly healthy: boolean;
  readonly message: string;
}

/** The `diag.nvml` result. */
export interface DiagNvmlResult {
  readonly driver_version: string;
  readonly cuda_version: string;
  readonly healthy: boolean;
  readonly gpus: readonly DiagGpu[];
}

/** The result for an inventory, GPUs sorted by PCI bus id. */
export function diagFromInventory(inv: GpuInventory): DiagNvmlResult {
  const gpus = [...inv.gpus].sort((a, b) => a.pciBusId < b.pciBusId ? -1 : a.pciBusId > b.pciBusId ? 1 : 0).map(
    (g): DiagGpu => {
      const why = gpuUnhealthyReason(g);
      return {
        gpu_uuid: g.uuid,
        pci_bus_id: g.pciBusId,
        numa_node: g.numaNode ?? null,
        product_name: g.productName ?? "",
        mig_mode: g.migMode,
        mig_instances: [...g.migInstances].sort((a, b) => a.gi - b.gi || a.ci - b.ci).map((m) => ({
          uuid: m.uuid ?? null,
          gi: m.gi,
          ci: m.ci,
        })),
        ecc_volatile_uncorrectable: g.eccVolatileUncorrectable ?? null,
        remap_pending: g.remap?.pending ?? null,
        remap_failed: g.remap?.failed ?? null,
        healthy: why === undefined,
        message: why ?? "",
      };
    },
  );
  return {
    driver_version: inv.driverVersion ?? "",
    cuda_version: inv.cudaVersion ?? "",
    healthy: gpus.every((g) => g.healthy),
    gpus,
  };
}

/** Runs `diag.nvml`: a fresh inventory, reported. The payload carries nothing. */
export async function diagNvml(gpu: GpuTool): Promise<DiagNvmlResult> {
  return diagFromInventory(await gpu.query());
}
