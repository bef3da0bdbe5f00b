/**
 * The devices converger over the real runtimes: CDI specs and env files in a temp root, slices through cgroupfs (a
 * fake tree for cpu/memory/cpuset; the real cgroup2 mount for hugetlb), the sim's file-backed GPU tool, and
 * gpu.reset reading the live holds back from the CDI directory.
 */
import assert from "node:assert/strict";
import { DevicesMemory } from "../../core/converge/devices/apply.ts";
import type { DevicesSection } from "../../core/converge/devices/assignment.ts";
import { DevicesConverger } from "../../core/converge/devices/converger.ts";
import { MemoryEventSink, StaticHostMemory } from "../../core/converge/devices/fakes.ts";
import { GpuKindError, gpuReset } from "../../core/converge/devices/gpu_reset.ts";
import type { HoldRecord } from "../../core/converge/devices/hold.ts";
import type { HoldStore, SliceManager } from "../../core/converge/devices/ports.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { CdiHoldStore } from "../cdi/hold_store.ts";
import { assertValidCdiSpec } from "../../fixtures/cdi/schema_check.ts";
import { FakeGpuTool } from "../nvidia/fake_gpu_tool.ts";
import { hgxInventory } from "../nvidia/hgx.ts";
import { sliceDir } from "./cgroup_files.ts";
import {
  fakeCgroupfsSubject,
  pageSizeUnavailable,
  realCgroupfsSubject,
  realCgroupUnavailable,
  type SliceSubject,
} from "./trees_testing.ts";

const GiB = 2 ** 30;
const HGX = hgxInventory();
const [G0, G1, G2] = HGX.gpus.map((g) => g.uuid) as [string, string, string];

async function stack(s: SliceSubject) {
  const root = await Deno.makeTempDir({ prefix: "bcd-devstack-" });
  const store = new CdiHoldStore({ cdiDir: `${root}/etc/cdi`, envDir: `${root}/run/bcd/allocations` });
  const slicesAtWrite: string[][] = [];
  // Records which slices exist at each spec write: the slice must come before the spec that names it.
  const recording: HoldStore = {
    list: () => store.list(),
    write: async (r: HoldRecord) => {
      slicesAtWrite.push(await s.mgr.list());
      await store.write(r);
    },
    remove: (id) => store.remove(id),
    removeEnv: (id) => store.removeEnv(id),
  };
  const gpu = await FakeGpuTool.create(`${root}/gpus.json`);
  const events = new MemoryEventSink();
  const slices: SliceManager = {
    apply: async (n, st) => {
      await s.mgr.apply(n, st);
      await s.afterCreate(n);
    },
    list: () => s.mgr.list(),
    remove: (n) => s.mgr.remove(n),
    hugetlbUsage: (n) => s.mgr.hugetlbUsage(n),
  };
  const conv = new DevicesConverger({
    gpu,
    holds: recording,
    slices,
    hostMemory: new StaticHostMemory({
      memTotalBytes: 256 * GiB,
      hugetlbBytes: 16 * 2 ** 21,
      pages2Mi: { free: 16, reserved: 0 },
    }),
    events,
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(false),
  });
  let gen = 0;
  const pass = async (section: DevicesSection) => {
    const ctx = { generation: ++gen, log: silentLogger() };
    return await conv.apply(conv.plan(section, await conv.observe(ctx)), section, ctx);
  };
  const cleanup = () => Deno.remove(root, { recursive: true });
  return { root, store, gpu, events, pass, slicesAtWrite, cleanup };
}

const names = async (dir: string) => {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
};

Deno.test("devices over the runtimes: a 2-GPU hold with limits binds, a conflicting hold fails overlap, gpu.reset is gpu-busy, a release removes spec, env and slice", async () => {
  const s = await fakeCgroupfsSubject();
  const st = await stack(s);
  try {
    const hold = {
      allocation_id: "alloc7",
      reservation_id: "res7",
      binding: "BINDING_HOLD",
      devices: [{ class: "gpu", id: G0 }, { class: "gpu", id: G1 }],
      limits: { cpu_millis: 8000, memory_bytes: 64 * GiB, cpus: "0-7", mems: "0" },
    };
    const clash = {
      allocation_id: "alloc8",
      reservation_id: "res8",
      binding: "BINDING_HOLD",
      devices: [{ class: "gpu.slot", id: `${G1}/s0` }],
    };
    const out = await st.pass({ assignments: [hold, clash] });
    assert.equal(out.kind, "failed");
    assert.deepEqual(st.events.events.map((e) => [e.type, e.allocation_id]), [["AllocationBound", "alloc7"], [
      "AllocationFailed",
      "alloc8",
    ]]);
    assert.equal((st.events.events[1] as { reason: string }).reason, "overlap");
    assert.deepEqual(st.slicesAtWrite, [["bcd-alloc-alloc7.slice"]], "the slice exists before the spec names it");
    const dir = sliceDir(s.root, "bcd-alloc-alloc7.slice");
    assert.equal((await Deno.readTextFile(`${dir}/cpu.max`)).trim(), "800000 100000");
    assert.equal((await Deno.readTextFile(`${dir}/memory.max`)).trim(), `${64 * GiB}`);
    assert.equal((await Deno.readTextFile(`${dir}/memory.high`)).trim(), `${Math.floor(64 * GiB * 0.9)}`);
    assert.equal((await Deno.readTextFile(`${dir}/cpuset.cpus`)).trim(), "0-7");
    const spec = JSON.parse(await Deno.readTextFile(st.store.specPath("alloc7")));
    assertValidCdiSpec(spec);
    assert.equal(spec.annotations["bcd.dev/cgroup-parent"], "bcd-alloc-alloc7.slice");
    assert.deepEqual((await Deno.readTextFile(st.store.envPath("alloc7"))).split("\n"), [
      `NVIDIA_VISIBLE_DEVICES=${G0},${G1}`,
      "BCD_ALLOCATION_ID=alloc7",
      "BCD_CGROUP_PARENT=bcd-alloc-alloc7.slice",
      "",
    ]);

    const live = async () => await st.store.list();
    await assert.rejects(
      gpuReset({ gpu_uuids: [G2, G1] }, {
        gpu: st.gpu,
        holds: live,
        passthrough: () => [],
        conditions: { clearXid: () => {} },
      }),
      (e) => e instanceof GpuKindError && e.reason === "gpu-busy" && /alloc7/.test(e.message),
    );
    assert.deepEqual((await st.gpu.read()).resets ?? [], [], "nothing was reset");

    await st.pass({ assignments: [] });
    assert.deepEqual(await names(`${st.root}/etc/cdi`), []);
    assert.deepEqual(await names(`${st.root}/run/bcd/allocations`), []);
    assert.deepEqual(await s.mgr.list(), []);
    assert.deepEqual(st.events.events.at(-1), {
      type: "AllocationReleased",
      allocation_id: "alloc7",
      generation: 2,
      cdi_devices: [`bcd.dev/gpu=${G0}`, `bcd.dev/gpu=${G1}`],
    });
    const r = await gpuReset({ gpu_uuids: [G1] }, {
      gpu: st.gpu,
      holds: live,
      passthrough: () => [],
      conditions: { clearXid: () => {} },
    });
    assert.deepEqual(r.gpus, [{ gpu_uuid: G1, reset: true, healthy: true, message: "" }]);
  } finally {
    await st.cleanup();
    await s.cleanup();
  }
});

const skip = realCgroupUnavailable() ?? pageSizeUnavailable("2MB");
if (skip) console.log(`real cgroup2 devices test skipped: ${skip}`);

Deno.test({
  name: "devices over the real cgroup2 mount: a hold's huge pages become a real hugetlb limit, gone at release",
  ignore: !!skip,
}, async () => {
  const s = await realCgroupfsSubject();
  const st = await stack(s);
  try {
    const hold = {
      allocation_id: "huge1",
      reservation_id: "r",
      binding: "BINDING_HOLD",
      devices: [{ class: "gpu.mig", id: `${HGX.gpus[2]!.uuid}/gi1/ci0` }],
      limits: { hugepages_2mi: 8 },
    };
    assert.deepEqual(await st.pass({ assignments: [hold] }), { kind: "converged" });
    const dir = sliceDir(s.root, "bcd-alloc-huge1.slice");
    assert.equal((await Deno.readTextFile(`${dir}/hugetlb.2MB.max`)).trim(), `${8 * 2 ** 21}`);
    const big = {
      ...hold,
      allocation_id: "huge2",
      devices: [{ class: "gpu.mig", id: `${HGX.gpus[2]!.uuid}/gi2/ci0` }],
      limits: { hugepages_2mi: 9 },
    };
    await st.pass({ assignments: [hold, big] });
    assert.equal(
      (st.events.events.at(-1) as { reason?: string }).reason,
      "resources-exhausted",
      "16 free pages, 8 booked",
    );
    await st.pass({ assignments: [] });
    assert.deepEqual(await s.mgr.list(), []);
    await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
  } finally {
    await st.cleanup();
    await s.cleanup();
  }
});
