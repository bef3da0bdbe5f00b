import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { type ApplyContext, ConvergenceEngine } from "../engine.ts";
import { ConditionSet } from "../conditions.ts";
import { StaticHostMemory } from "../devices/fakes.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";
import { lazyInstancesConverger } from "./lazy.ts";

const GiB = 2 ** 30;
const GPU = "GPU-00000000-0000-0000-0000-000000000001";
const memory = new StaticHostMemory({ memTotalBytes: 256 * GiB, hugetlbBytes: 0 });
const ctx: ApplyContext = { generation: 1, conditions: new ConditionSet(), log: silentLogger() };

/** What the agent reads of a converger, besides its passes. */
function seen(c: {
  runtimeNames: readonly string[];
  listing(): unknown;
  passthrough(): unknown;
  committedBytes(): number;
}) {
  return {
    runtimeNames: [...c.runtimeNames],
    listing: c.listing(),
    passthrough: c.passthrough(),
    committedBytes: c.committedBytes(),
  };
}

Deno.test("before its first pass the lazy instances converger answers what a fresh one over the same runtimes does, loading nothing", async (t) => {
  const rows: [string, string[]][] = [["no runtime", []], ["one runtime plugin", ["plug"]], ["two", ["a", "b"]]];
  for (const [name, runtimes] of rows) {
    await t.step(name, () => {
      let loads = 0;
      const lazy = lazyInstancesConverger(runtimes, () => {
        loads++;
        return Promise.resolve(new InstancesConverger(runtimes.map((r) => new MemoryRuntime(r)), { memory }));
      });
      const fresh = new InstancesConverger(runtimes.map((r) => new MemoryRuntime(r)), { memory });
      assert.equal(lazy.section, "instances");
      assert.deepEqual(seen(lazy), seen(fresh));
      assert.equal(loads, 0);
    });
  }
});

Deno.test("the first pass loads the converger once; after it every answer is the loaded converger's", async () => {
  let loads = 0;
  let loaded: InstancesConverger | undefined;
  const rt = new MemoryRuntime("plug");
  const lazy = lazyInstancesConverger(["plug"], () => {
    loads++;
    return Promise.resolve(loaded = new InstancesConverger([rt], { memory }));
  });
  const engine = new ConvergenceEngine({ convergers: [lazy], log: silentLogger() });
  const vm = {
    id: "vm1",
    allocation_id: "alloc-vm1",
    runtime: "plug",
    state: 1,
    vcpus: 1,
    memory_bytes: 4 * GiB,
    gpus: [{ uuid: GPU, pci_bus_id: "00000000:17:00.0" }],
  };
  for (const generation of [1, 2]) {
    engine.hold({ generation, specHash: `h${generation}`, sections: { instances: { instances: [vm] } } });
    await engine.pass();
  }
  assert.equal(loads, 1);
  assert.deepEqual(lazy.passthrough(), [{ gpuUuid: GPU, instance: "vm1" }], "the loaded converger's view");
  assert.ok(lazy.committedBytes() > 4 * GiB);
  assert.deepEqual(seen(lazy), seen(loaded!));
  assert.equal(lazy.listing().complete, true);
});

Deno.test("a load over other runtimes than named fails that pass, and the next pass loads again", async () => {
  let attempt = 0;
  const lazy = lazyInstancesConverger(["plug"], () => {
    attempt++;
    const names = attempt === 1 ? ["other"] : ["plug"];
    return Promise.resolve(new InstancesConverger(names.map((n) => new MemoryRuntime(n)), { memory }));
  });
  await assert.rejects(lazy.observe(ctx, undefined), /loaded over \[other\], not \[plug\]/);
  assert.deepEqual(lazy.passthrough(), []);
  await lazy.observe(ctx, undefined);
  assert.equal(attempt, 2);
});
