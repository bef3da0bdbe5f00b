/**
 * A simulated HGX H100 board: eight GPUs on two NUMA nodes, with MIG on the GPUs asked for. The sim role's fake GPU
 * tool starts from it and the fixtures in `fixtures/nvidia/` were rendered from it.
 *
 * @module
 */
import type { GpuInfo, GpuInventory, MigInstance } from "../../core/converge/devices/inventory.ts";

/** The HGX H100 board's GPU PCI buses, in nvidia-smi order. */
export const HGX_BUSES: readonly string[] = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"];

const _UUIDS = [
  "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31",
  "GPU-0a9d8c7b-6e5f-4a3b-9c2d-1e0f9a8b7c62",
  "GPU-b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d93",
  "GPU-c7d6e5f4-a3b2-4c1d-9e8f-7a6b5c4d3e04",
  "GPU-d2e3f4a5-b6c7-4d8e-9f0a-1b2c3d4e5f15",
  "GPU-e9f8a7b6-c5d4-4e3f-8a2b-1c0d9e8f7a26",
  "GPU-f4a5b6c7-d8e9-4f0a-9b1c-2d3e4f5a6b37",
  "GPU-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c48",
];

/** MIG layouts the sim offers: two 3g.40gb instances, or seven 1g.10gb ones. */
export type HgxMigLayout = "2x3g.40gb" | "7x1g.10gb";

function _mig(gpuIndex: number, layout: HgxMigLayout): MigInstance[] {
  const gis = layout === "2x3g.40gb" ? [1, 2] : [7, 8, 9, 10, 11, 12, 13];
  const profile = layout === "2x3g.40gb" ? "3g.40gb" : "1g.10gb";
  return gis.map((gi, index) => ({
    uuid: `MIG-${gpuIndex}${gi.toString(16).padStart(7, "0")}-5b1e-5c6d-9e7f-${
      String(gpuIndex * 100 + gi).padStart(12, "0")
    }`,
    gi,
    ci: 0,
    index,
    profile,
  }));
}

/** The board, with MIG enabled on the GPUs `mig` names (index → layout). */
export function hgxInventory(
  mig: Readonly<Record<number, HgxMigLayout>> = { 2: "2x3g.40gb", 5: "7x1g.10gb" },
): GpuInventory {
  const gpus: GpuInfo[] = HGX_BUSES.map((bus, i) => {
    const layout = mig[i];
    return {
      uuid: _UUIDS[i]!,
      pciBusId: `00000000:${bus}:00.0`,
      minorNumber: i,
      numaNode: i < 4 ? 0 : 1,
      productName: "NVIDIA H100 80GB HBM3",
      migMode: layout ? "Enabled" : "Disabled",
      migPending: layout ? "Enabled" : "Disabled",
      migInstances: layout ? _mig(i, layout) : [],
      eccVolatileUncorrectable: 0,
      remap: { pending: false, failed: false },
    };
  });
  return { driverVersion: "550.90.07", cudaVersion: "12.4", gpus };
}
