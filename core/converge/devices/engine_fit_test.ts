/**
 * The devices converger inside the real convergence engine: it is a `SectionConverger` as is (its `plan` maps the
 * decoded wire section), and the section reports CONVERGED, FAILED (terminal, with the seed's reason) and PROGRESSING as the seed
 * says.
 */
import assert from "node:assert/strict";
import { bcd } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine, type SectionConverger } from "../engine.ts";
import { DevicesMemory } from "./apply.ts";
import { DevicesConverger } from "./converger.ts";
import { MemoryEventSink, MemoryHoldStore, MemorySliceManager, StaticGpuTool, StaticHostMemory } from "./fakes.ts";
import { sampleInventory, sampleUuid } from "./inventory_testing.ts";

function wired() {
  const holds = new MemoryHoldStore();
  const events = new MemoryEventSink();
  const conv = new DevicesConverger({
    gpu: new StaticGpuTool(sampleInventory()),
    holds,
    slices: new MemorySliceManager(),
    hostMemory: new StaticHostMemory({ memTotalBytes: 2 ** 36, hugetlbBytes: 0 }),
    events,
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(false),
  });
  const section: SectionConverger = conv; // registered as is
  const engine = new ConvergenceEngine({ convergers: [section], log: silentLogger() });
  return { engine, holds, events };
}

const decoded = (assignments: bcd.v1.IDeviceAssignment[]) =>
  bcd.v1.DevicesSection.decode(bcd.v1.DevicesSection.encode({ assignments }).finish());

Deno.test("in the engine: a hold converges, a conflicting one fails the section terminally with overlap", async () => {
  const { engine, holds, events } = wired();
  const a = { allocation_id: "a", reservation_id: "r", binding: 1, devices: [{ class: "gpu", id: sampleUuid(0) }] };
  engine.hold({ generation: 1, specHash: "h1", sections: { devices: decoded([a]) } });
  let s = await engine.pass();
  assert.equal(s.sections.find((x) => x.section === "devices")!.state, "CONVERGED");
  assert.equal(s.observed_generation, 1);
  assert.ok(holds.specs.has("a"));

  const b = {
    allocation_id: "b",
    reservation_id: "r",
    binding: 1,
    devices: [{ class: "gpu.slot", id: `${sampleUuid(0)}/s0` }],
  };
  engine.hold({ generation: 2, specHash: "h2", sections: { devices: decoded([a, b]) } });
  s = await engine.pass();
  const dev = s.sections.find((x) => x.section === "devices")!;
  assert.equal(dev.state, "FAILED");
  assert.equal(dev.reason, "overlap");
  assert.equal(s.observed_generation, 2, "a terminal failure lets observed_generation advance");
  assert.deepEqual(events.events.map((e) => e.type), ["AllocationBound", "AllocationFailed"]);
});
