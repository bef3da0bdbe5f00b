import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConditionSet } from "../conditions.ts";
import type { ApplyContext } from "../engine.ts";
import type { DeviceAssignment } from "./assignment.ts";
import { DevicesMemory } from "./apply.ts";
import { DevicesConverger } from "./converger.ts";
import { MemoryEventSink, MemoryHoldStore, MemorySliceManager, StaticGpuTool, StaticHostMemory } from "./fakes.ts";
import { sampleInventory, sampleUuid } from "./inventory_testing.ts";
import { lazyDevicesConverger } from "./lazy.ts";

const GiB = 2 ** 30;
const ctx: ApplyContext = { generation: 1, conditions: new ConditionSet(), log: silentLogger() };

function make(holds = new MemoryHoldStore()): DevicesConverger {
  return new DevicesConverger({
    gpu: new StaticGpuTool(sampleInventory()),
    holds,
    slices: new MemorySliceManager(),
    hostMemory: new StaticHostMemory({ memTotalBytes: 64 * GiB, hugetlbBytes: 0 }),
    events: new MemoryEventSink(),
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(false),
  });
}

const hold: DeviceAssignment = {
  allocation_id: "a1",
  reservation_id: "res-a1",
  binding: "BINDING_HOLD",
  devices: [{ class: "gpu", id: sampleUuid(0) }],
  limits: { memory_bytes: 2 * GiB },
};

Deno.test("before its first pass the lazy devices converger answers what a fresh one does, loading nothing", () => {
  let loads = 0;
  const lazy = lazyDevicesConverger(() => {
    loads++;
    return Promise.resolve(make());
  });
  const fresh = make();
  assert.equal(lazy.section, "devices");
  assert.deepEqual(
    [lazy.boundCommittedBytes(), lazy.heldCount()],
    [fresh.boundCommittedBytes(), fresh.heldCount()],
  );
  assert.equal(loads, 0);
});

Deno.test("the first pass loads the devices converger once; after it the answers are the loaded converger's", async () => {
  let loads = 0;
  const holds = new MemoryHoldStore();
  let loaded: DevicesConverger | undefined;
  const lazy = lazyDevicesConverger(() => {
    loads++;
    return Promise.resolve(loaded = make(holds));
  });
  for (const generation of [1, 2]) {
    const c = { ...ctx, generation };
    const section = { assignments: [hold] };
    const observed = await lazy.observe(c, section);
    await lazy.apply(lazy.plan(section, observed), section, c);
  }
  await lazy.observe(ctx, { assignments: [hold] });
  assert.equal(loads, 1);
  assert.equal(lazy.heldCount(), 1, "the hold it bound, read back");
  assert.ok(lazy.boundCommittedBytes() >= 2 * GiB);
  assert.deepEqual(
    [lazy.boundCommittedBytes(), lazy.heldCount()],
    [loaded!.boundCommittedBytes(), loaded!.heldCount()],
  );
});
