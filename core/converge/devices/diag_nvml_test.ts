import assert from "node:assert/strict";
import { diagNvml } from "./diag_nvml.ts";
import { StaticGpuTool } from "./fakes.ts";
import { sampleGpu } from "./sample_inventory.ts";

Deno.test("diag.nvml reports every GPU sorted by PCI bus id, with MIG instances and health", async () => {
  const tool = new StaticGpuTool({
    driverVersion: "550.90.07",
    cudaVersion: "12.4",
    gpus: [
      sampleGpu(3, { remap: { pending: true, failed: false } }),
      sampleGpu(1),
      sampleGpu(0, { remap: undefined, eccVolatileUncorrectable: undefined }),
    ],
  });
  const r = await diagNvml(tool);
  assert.equal(r.driver_version, "550.90.07");
  assert.equal(r.healthy, false);
  assert.deepEqual(r.gpus.map((g) => [g.pci_bus_id, g.healthy, g.message]), [
    ["00000000:18:00.0", true, ""],
    ["00000000:28:00.0", true, ""],
    ["00000000:48:00.0", false, "row remap pending"],
  ]);
  assert.deepEqual(r.gpus[1]!.mig_instances, [
    { uuid: "MIG-aaaaaaaa-0000-0000-0000-000000000001", gi: 1, ci: 0 },
    { uuid: "MIG-aaaaaaaa-0000-0000-0000-000000000002", gi: 2, ci: 0 },
  ]);
  assert.equal(r.gpus[0]!.ecc_volatile_uncorrectable, null, "N/A stays null, never 0");
  assert.equal(JSON.stringify(await diagNvml(tool)), JSON.stringify(r), "stable for the attested SHA-256");
});
