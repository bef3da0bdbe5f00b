/**
 * A small inventory for tests of this folder: four GPUs on two NUMA nodes, MIG on the second.
 *
 * @module
 */
import type { GpuInfo, GpuInventory } from "./inventory.ts";

/** `GPU-0000000n-…`, the sample GPUs' UUIDs. */
export function sampleUuid(n: number): string {
  return `GPU-${String(n).padStart(8, "0")}-1111-2222-3333-444444444444`;
}

/** The sample GPU `n` (0–3). */
export function sampleGpu(n: number, over: Partial<GpuInfo> = {}): GpuInfo {
  return {
    uuid: sampleUuid(n),
    pciBusId: `00000000:${(0x18 + n * 0x10).toString(16).toUpperCase()}:00.0`,
    minorNumber: n,
    numaNode: n < 2 ? 0 : 1,
    productName: "NVIDIA H100 80GB HBM3",
    migMode: n === 1 ? "Enabled" : "Disabled",
    migInstances: n === 1
      ? [
        { uuid: "MIG-aaaaaaaa-0000-0000-0000-000000000001", gi: 1, ci: 0, index: 0, profile: "3g.40gb" },
        { uuid: "MIG-aaaaaaaa-0000-0000-0000-000000000002", gi: 2, ci: 0, index: 1, profile: "3g.40gb" },
      ]
      : [],
    eccVolatileUncorrectable: 0,
    remap: { pending: false, failed: false },
    ...over,
  };
}

/** Four healthy GPUs. */
export function sampleInventory(): GpuInventory {
  return { driverVersion: "550.90.07", cudaVersion: "12.4", gpus: [0, 1, 2, 3].map((n) => sampleGpu(n)) };
}
