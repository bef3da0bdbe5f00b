import assert from "node:assert/strict";
import { StaticGpuTool } from "./fakes.ts";
import { GpuKindError, gpuReset, type GpuResetPorts, xidConditionsOf } from "./gpu_reset.ts";
import { ConditionSet } from "../conditions.ts";
import { xidsFromConditions } from "./diag_nvml.ts";
import type { ObservedHold, UnreadableHold } from "./hold.ts";
import type { GpuInventory } from "./inventory.ts";
import { sampleGpu, sampleInventory, sampleUuid } from "./inventory_testing.ts";
import type { PassthroughGpu } from "./conflicts.ts";

const [G0, G1, G2, G3] = [0, 1, 2, 3].map(sampleUuid) as [string, string, string, string];

function ports(
  o: { holds?: ObservedHold[]; unreadable?: UnreadableHold[]; passthrough?: PassthroughGpu[]; inv?: GpuInventory } = {},
) {
  const cleared: string[] = [];
  // A reset clears volatile ECC counters and settles a pending remap; a failed remap stays.
  const gpu = new StaticGpuTool(o.inv ?? sampleInventory(), (uuid, inv) => ({
    ...inv,
    gpus: inv.gpus.map((g) =>
      g.uuid === uuid
        ? { ...g, eccVolatileUncorrectable: 0, remap: { pending: false, failed: g.remap?.failed ?? false } }
        : g
    ),
  }));
  const p: GpuResetPorts = {
    gpu,
    holds: () => Promise.resolve({ holds: o.holds ?? [], unreadable: o.unreadable ?? [] }),
    passthrough: () => o.passthrough ?? [],
    conditions: { clearXid: (u) => void cleared.push(u) },
  };
  return { p, gpu, cleared };
}

const holdOn = (id: string, cls: "gpu" | "gpu.mig" | "gpu.slot", atom: string, gpuUuid: string): ObservedHold => ({
  allocationId: id,
  binding: "hold",
  devices: [{ class: cls, atom, gpuUuid }],
  env: [],
});

Deno.test("gpu.reset with an empty list fails invalid-payload", async () => {
  for (const payload of [{ gpu_uuids: [] }, {}, null, { gpu_uuids: "GPU-1" }, { gpu_uuids: [7] }]) {
    await assert.rejects(
      gpuReset(payload, ports().p),
      (e) => e instanceof GpuKindError && e.reason === "invalid-payload",
    );
  }
});

Deno.test("gpu.reset of a GPU a live hold names, whole, by MIG instance or slot, or passed through, fails gpu-busy naming it", async (t) => {
  const rows: [string, Parameters<typeof ports>[0], RegExp][] = [
    ["held whole", { holds: [holdOn("h1", "gpu", G1, G1)] }, /allocation h1/],
    ["held by a MIG instance", { holds: [holdOn("h2", "gpu.mig", `${G1}/gi1/ci0`, G1)] }, /allocation h2/],
    ["held by a slot", { holds: [holdOn("h3", "gpu.slot", `${G1}/s0`, G1)] }, /allocation h3/],
    ["passed through to a VM", { passthrough: [{ gpuUuid: G1, instance: "inst-9" }] }, /instance inst-9/],
  ];
  for (const [name, o, naming] of rows) {
    await t.step(name, async () => {
      const { p, gpu } = ports(o);
      await assert.rejects(
        gpuReset({ gpu_uuids: [G0, G1] }, p),
        (e) => e instanceof GpuKindError && e.reason === "gpu-busy" && naming.test(e.message),
      );
      assert.deepEqual(gpu.resets, [], "nothing is touched: the whole command fails");
    });
  }
});

Deno.test("gpu.reset: unknown GPU, a tool failure, and health from a fresh inventory", async () => {
  const inv = {
    gpus: [
      sampleGpu(0),
      sampleGpu(1, { eccVolatileUncorrectable: 3 }),
      sampleGpu(2, { remap: { pending: false, failed: true } }),
      sampleGpu(3, { remap: { pending: true, failed: false } }),
    ],
  };
  const { p, gpu, cleared } = ports({ inv });
  gpu.failReset.set(G2, "Unable to reset GPU: in use by another client");
  const r = await gpuReset({ gpu_uuids: [G0, "GPU-unknown", G2, G3, G1] }, p);
  assert.deepEqual(r.gpus, [
    { gpu_uuid: G0, reset: true, healthy: true, message: "" },
    { gpu_uuid: "GPU-unknown", reset: false, healthy: false, message: "unknown GPU" },
    { gpu_uuid: G2, reset: false, healthy: false, message: "Unable to reset GPU: in use by another client" },
    { gpu_uuid: G3, reset: true, healthy: true, message: "" },
    { gpu_uuid: G1, reset: true, healthy: true, message: "" },
  ]);
  assert.deepEqual(gpu.resets, [G0, G2, G3, G1]);
  assert.deepEqual(cleared.sort(), [G0, G1, G3].sort(), "XID conditions cleared on healthy resets only");
});

Deno.test("gpu.reset marks a GPU unhealthy when the fresh inventory still shows a failed remap or ECC errors", async () => {
  const inv = { gpus: [sampleGpu(2, { remap: { pending: false, failed: true } })] };
  const { p, gpu, cleared } = ports({ inv });
  const r = await gpuReset({ gpu_uuids: [G2] }, p);
  assert.deepEqual(r.gpus, [{ gpu_uuid: G2, reset: true, healthy: false, message: "row remap failed" }]);
  assert.deepEqual(cleared, []);
  assert.deepEqual(gpu.resets, [G2]);
  const stuck = new StaticGpuTool({ gpus: [sampleGpu(2, { eccVolatileUncorrectable: 1 })] }); // counters survive
  const r2 = await gpuReset({ gpu_uuids: [G2] }, { ...p, gpu: stuck });
  assert.equal(r2.gpus[0]!.healthy, false);
  assert.match(r2.gpus[0]!.message, /volatile uncorrectable ECC errors: 1/);
});

Deno.test("gpu.reset refuses while an unreadable hold spec may name the GPU", async () => {
  const { p } = ports({ unreadable: [{ allocationId: "u", path: "/etc/cdi/bcd-u.json", problem: "truncated" }] });
  await assert.rejects(gpuReset({ gpu_uuids: [G0] }, p), (e) => e instanceof GpuKindError && e.reason === "gpu-busy");
});

Deno.test("xidConditionsOf clears one GPU's XID conditions from the condition set and nothing else", () => {
  const cs = new ConditionSet({ monotonic: () => 0 });
  cs.set("XidError", G0, "True", "79", "fell off the bus");
  cs.set("XidError", G1, "True", "48", "");
  cs.set("SectionUnsupported", "host", "True", "7");
  xidConditionsOf(cs).clearXid(G0);
  assert.deepEqual(cs.report().map((c) => [c.type, c.subject]), [["SectionUnsupported", "host"], ["XidError", G1]]);
  assert.deepEqual(xidsFromConditions(cs)(G1), [48]);
  assert.deepEqual(xidsFromConditions(cs)(G0), []);
});
