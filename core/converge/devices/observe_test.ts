import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import type { DeviceAssignment, DevicesSection } from "./assignment.ts";
import { DevicesMemory } from "./apply.ts";
import { DevicesConverger } from "./converger.ts";
import { MemoryEventSink, MemoryHoldStore, MemorySliceManager, StaticGpuTool, StaticHostMemory } from "./fakes.ts";
import type { GpuInventory } from "./inventory.ts";
import { sampleInventory, sampleUuid } from "./inventory_testing.ts";
import type { HoldListing } from "./ports.ts";

const GiB = 2 ** 30;
const MiB2 = 2 * 2 ** 20;
const [G0, G1, G2] = [0, 1, 2].map(sampleUuid) as [string, string, string];

/** Slices whose huge page usage reads are counted, by slice name. */
class CountingSlices extends MemorySliceManager {
  readonly usageReads: string[] = [];
  override hugetlbUsage(name: string) {
    this.usageReads.push(name);
    return super.hugetlbUsage(name);
  }
}

const hold = (id: string, gpu: string, limits: DeviceAssignment["limits"]): DeviceAssignment => ({
  allocation_id: id,
  reservation_id: `res-${id}`,
  binding: "BINDING_HOLD",
  devices: [{ class: "gpu", id: gpu }],
  ...(limits ? { limits } : {}),
});

function converger(slices: MemorySliceManager, over: Partial<ConstructorParameters<typeof DevicesConverger>[0]> = {}) {
  return new DevicesConverger({
    gpu: new StaticGpuTool(sampleInventory()),
    holds: new MemoryHoldStore(),
    slices,
    hostMemory: new StaticHostMemory({
      memTotalBytes: 64 * GiB,
      hugetlbBytes: 200 * MiB2,
      pages2Mi: { free: 100, reserved: 0 },
      hugePageSizes: [MiB2],
    }),
    events: new MemoryEventSink(),
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(false),
    ...over,
  });
}

Deno.test("an engine pass reads the faulted huge pages of only the slices whose assignment books huge pages", async () => {
  const slices = new CountingSlices();
  const devices = converger(slices);
  const engine = new ConvergenceEngine({ convergers: [devices], log: silentLogger() });
  const pages = hold("pages", G0, { hugepages_2mi: 50 });
  const memory = hold("memory", G1, { memory_bytes: GiB });
  engine.hold({ generation: 1, specHash: "1", sections: { devices: { assignments: [pages, memory] } } });
  assert.equal((await engine.pass()).sections[1]!.state, "CONVERGED");
  assert.deepEqual([...slices.slices.keys()].sort(), ["bcd-alloc-memory.slice", "bcd-alloc-pages.slice"]);
  slices.slices.get("bcd-alloc-pages.slice")!.hugetlb2MB = 20 * MiB2; // 20 of its 50 pages are in use

  // 100 free pages less the 30 "pages" booked and has not faulted in: 70 fit, which they would not without its usage.
  slices.usageReads.length = 0;
  const more = hold("more", G2, { hugepages_2mi: 70 });
  engine.hold({ generation: 2, specHash: "2", sections: { devices: { assignments: [pages, memory, more] } } });
  const s = await engine.pass();
  assert.equal(s.sections[1]!.state, "CONVERGED", JSON.stringify(s.sections[1]));
  assert.ok(slices.slices.has("bcd-alloc-more.slice"), "admitted with the faulted pages of the bound hold counted");
  assert.deepEqual(slices.usageReads, ["bcd-alloc-pages.slice"], "the memory-only hold's slice is not read");

  slices.usageReads.length = 0;
  await engine.pass();
  assert.deepEqual(slices.usageReads.sort(), ["bcd-alloc-more.slice", "bcd-alloc-pages.slice"]);
});

Deno.test("observe without the desired section reads every hold slice's huge pages, as before", async () => {
  const slices = new CountingSlices();
  const devices = converger(slices);
  const section = { assignments: [hold("a", G0, { memory_bytes: GiB }), hold("b", G1, { cpu_millis: 500 })] };
  const ctx = { generation: 1, log: silentLogger() };
  await devices.apply(devices.plan(section, await devices.observe(ctx)), section, ctx);
  slices.usageReads.length = 0;
  const o = await devices.observe(ctx);
  assert.deepEqual(slices.usageReads.sort(), ["bcd-alloc-a.slice", "bcd-alloc-b.slice"]);
  assert.deepEqual([...o.hugetlbUsage!.keys()].sort(), ["a", "b"]);
});

Deno.test("observe asks for the GPU inventory without waiting for the hold listing", async () => {
  const order: string[] = [];
  class SlowHolds extends MemoryHoldStore {
    override async list(): Promise<HoldListing> {
      order.push("holds.list asked");
      for (let i = 0; i < 5; i++) await Promise.resolve(); // a listing that takes a few turns of the loop
      order.push("holds.list answered");
      return super.list();
    }
  }
  class Gpu extends StaticGpuTool {
    override query(): Promise<GpuInventory> {
      order.push("gpu.query asked");
      return super.query();
    }
  }
  const devices = converger(new MemorySliceManager(), { holds: new SlowHolds(), gpu: new Gpu(sampleInventory()) });
  await devices.observe({ generation: 1, log: silentLogger() }, { assignments: [] });
  assert.deepEqual(order, ["holds.list asked", "gpu.query asked", "holds.list answered"]);
});

Deno.test("plan maps the section it is handed, not the one the observation before it was made for", async () => {
  const devices = converger(new MemorySliceManager());
  const ctx = { generation: 1, log: silentLogger() };
  const seen: DevicesSection = { assignments: [hold("a", G0, undefined)] };
  const o = await devices.observe(ctx, seen);
  const other: DevicesSection = { assignments: [hold("b", G1, undefined)] };
  const actions = devices.plan(other, o);
  assert.deepEqual(actions.map((a) => a.kind === "bind" ? a.assignment.allocation_id : a.kind), ["b"]);
  assert.deepEqual(devices.plan(seen, o).map((a) => a.kind === "bind" ? a.assignment.allocation_id : a.kind), ["a"]);
});
