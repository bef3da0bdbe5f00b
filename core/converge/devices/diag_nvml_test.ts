import assert from "node:assert/strict";
import { diagNvml } from "./diag_nvml.ts";
import { StaticGpuTool } from "./fakes.ts";
import { sampleGpu, sampleUuid } from "./inventory_testing.ts";

const tool = () =>
  new StaticGpuTool({
    driverVersion: "550.90.07",
    gpus: [
      sampleGpu(3, { remap: { pending: true, failed: false } }),
      sampleGpu(1, { temperatureC: 40, powerW: 120.5 }),
      sampleGpu(0, { remap: undefined, eccVolatileUncorrectable: undefined }),
      sampleGpu(4, { resetRequired: true, recoveryAction: "Reset" }),
      sampleGpu(2, { eccVolatileUncorrectable: 2 }),
    ],
  });

Deno.test("diag.nvml diagnoses every GPU by PCI bus id: ECC, remap and this boot's XIDs make a GPU unhealthy", async () => {
  const r = await diagNvml({}, tool(), (u) => u === sampleUuid(1) ? [79] : []);
  assert.deepEqual(r.gpus.map((g) => [g.pci_bus_id, g.healthy, g.problems]), [
    ["00000000:18:00.0", true, []],
    ["00000000:28:00.0", false, ["XID 79"]],
    ["00000000:38:00.0", false, ["volatile uncorrectable ECC errors: 2"]],
    ["00000000:48:00.0", false, ["row remap pending"]],
    ["00000000:58:00.0", false, ["reset required", "recovery action: Reset"]],
  ]);
  assert.deepEqual(r.gpus[1], {
    gpu_uuid: sampleUuid(1),
    healthy: false,
    problems: ["XID 79"],
    temperature_c: 40,
    power_w: 120.5,
    ecc: { enabled: true, volatile_uncorrectable: 0 },
    remap: { pending: false, failed: false },
    xids: [79],
    pci_bus_id: "00000000:28:00.0",
  });
  assert.equal(r.gpus[0]!.ecc, undefined, "N/A ECC is absent, never 0");
  assert.equal(JSON.stringify(await diagNvml({}, tool())), JSON.stringify(await diagNvml({}, tool())), "stable");
});

Deno.test("diag.nvml of listed GPUs keeps their order and reads an unknown one as unknown GPU", async () => {
  const r = await diagNvml({ gpu_uuids: [sampleUuid(2), "GPU-nope", sampleUuid(0)] }, tool());
  assert.deepEqual(r.gpus.map((g) => [g.gpu_uuid, g.healthy, g.problems]), [
    [sampleUuid(2), false, ["volatile uncorrectable ECC errors: 2"]],
    ["GPU-nope", false, ["unknown GPU"]],
    [sampleUuid(0), true, []],
  ]);
});
