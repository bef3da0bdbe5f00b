import assert from "node:assert/strict";
import { memoryLogger, silentLogger } from "../../log/mod.ts";
import type { DeviceAssignment, DevicesSection } from "./assignment.ts";
import { DevicesMemory } from "./apply.ts";
import { DevicesConverger } from "./converger.ts";
import type { DeviceEvent } from "./events.ts";
import { MemoryEventSink, MemoryHoldStore, MemorySliceManager, StaticGpuTool, StaticHostMemory } from "./fakes.ts";
import { PageSizeUnsupported } from "./ports.ts";
import type { PassthroughGpu } from "./conflicts.ts";
import { sampleInventory, sampleUuid } from "./inventory_testing.ts";

const GiB = 2 ** 30;
const [G0, G1, G2, G3] = [0, 1, 2, 3].map(sampleUuid) as [string, string, string, string];

function harness(opts: { mps?: boolean; announced?: Set<string>; passthrough?: PassthroughGpu[] } = {}) {
  const holds = new MemoryHoldStore();
  const slices = new MemorySliceManager();
  const events = new MemoryEventSink();
  const gpu = new StaticGpuTool(sampleInventory());
  const hostMemory = new StaticHostMemory({ memTotalBytes: 64 * GiB, hugetlbBytes: 0 });
  const conv = new DevicesConverger({
    gpu,
    holds,
    slices,
    hostMemory,
    events,
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(opts.mps ?? false),
    passthrough: () => opts.passthrough ?? [],
    announced: opts.announced ? () => Promise.resolve(opts.announced!) : undefined,
  });
  let generation = 0;
  const log = memoryLogger("warn");
  const pass = async (section: DevicesSection | undefined, gen = ++generation) => {
    const ctx = { generation: gen, log: log.logger };
    const before = events.events.length;
    const observed = await conv.observe(ctx);
    const actions = conv.plan(section, observed);
    const outcome = await conv.apply(actions, section, ctx);
    return { actions, outcome, events: events.events.slice(before) as DeviceEvent[] };
  };
  return { holds, slices, events, gpu, hostMemory, conv, pass, log };
}

const hold = (id: string, devices: [string, string][], more: Partial<DeviceAssignment> = {}): DeviceAssignment => ({
  allocation_id: id,
  reservation_id: `res-${id}`,
  binding: "BINDING_HOLD",
  devices: devices.map(([c, i]) => ({ class: c, id: i })),
  ...more,
});

Deno.test("a 2-GPU hold binds: CDI spec, env file, AllocationBound with bcd.dev/gpu= names; the next pass does nothing", async () => {
  const h = harness();
  const r = await h.pass({ assignments: [hold("a1", [["gpu", G0], ["gpu", G2]])] });
  assert.deepEqual(r.outcome, { kind: "converged" });
  assert.deepEqual(r.events, [{
    type: "AllocationBound",
    allocation_id: "a1",
    reservation_id: "res-a1",
    generation: 1,
    cdi_devices: [`bcd.dev/gpu=${G0}`, `bcd.dev/gpu=${G2}`],
    devices: [{ class: "gpu", id: G0 }, { class: "gpu", id: G2 }],
    cgroup_parent: "",
  }]);
  const rec = h.holds.specs.get("a1")!;
  assert.deepEqual(rec.env, [`NVIDIA_VISIBLE_DEVICES=${G0},${G2}`, "BCD_ALLOCATION_ID=a1"]);
  assert.deepEqual(h.holds.envs.get("a1"), rec.env);
  assert.equal(rec.cgroupParent, undefined, "a hold without limits gets no slice");
  assert.equal(h.slices.slices.size, 0);
  const again = await h.pass({ assignments: [hold("a1", [["gpu", G0], ["gpu", G2]])] }, 1);
  assert.deepEqual(again.actions, []);
  assert.deepEqual(again.events, []);
});

Deno.test("a conflicting hold fails overlap, terminally, and the first hold stays", async () => {
  const h = harness();
  await h.pass({ assignments: [hold("a1", [["gpu", G1]])] });
  const r = await h.pass({ assignments: [hold("a1", [["gpu", G1]]), hold("a2", [["gpu.mig", `${G1}/gi1/ci0`]])] });
  assert.equal(r.outcome.kind, "failed");
  assert.equal((r.outcome as { reason: string }).reason, "overlap");
  assert.equal(r.events.length, 1);
  assert.equal(r.events[0]!.type, "AllocationFailed");
  assert.equal((r.events[0] as { reason: string }).reason, "overlap");
  assert.ok(h.holds.specs.has("a1") && !h.holds.specs.has("a2"));
  const again = await h.pass(
    { assignments: [hold("a1", [["gpu", G1]]), hold("a2", [["gpu.mig", `${G1}/gi1/ci0`]])] },
    2,
  );
  assert.equal(again.outcome.kind, "failed");
  assert.deepEqual(again.events, [], "the same failure is journaled once per generation");
});

Deno.test("a hold never takes a GPU passed through to a VM", async () => {
  const h = harness({ passthrough: [{ gpuUuid: G3, instance: "vm-7" }] });
  const r = await h.pass({ assignments: [hold("a1", [["gpu.slot", `${G3}/s0`]])] });
  assert.equal((r.events[0] as { reason: string }).reason, "overlap");
  assert.match((r.events[0] as { message: string }).message, /vm-7/);
});

Deno.test("failure reasons: device-missing, unsupported-binding, unsupported-device, overlap within one assignment", async (t) => {
  const rows: [string, DeviceAssignment, string][] = [
    ["a MIG instance the layout has not made", hold("m", [["gpu.mig", `${G1}/gi9/ci0`]]), "device-missing"],
    ["a GPU not in the inventory", hold("m", [["gpu", "GPU-ffffffff-0000"]]), "device-missing"],
    [
      "a binding other than HOLD and KUBERNETES",
      hold("m", [["gpu", G0]], { binding: "BINDING_SLURM" }),
      "unsupported-binding",
    ],
    ["a device class bcd does not hold", hold("m", [["nic", "eth0"]]), "unsupported-device"],
    ["a GPU and its slot in one hold", hold("m", [["gpu", G0], ["gpu.slot", `${G0}/s1`]]), "overlap"],
    ["an id bcd cannot name files with", hold("../x", [["gpu", G0]]), "invalid-assignment"],
  ];
  for (const [name, a, reason] of rows) {
    await t.step(`${name}: ${reason}`, async () => {
      const h = harness();
      const r = await h.pass({ assignments: [a] });
      assert.deepEqual(r.events.map((e) => (e as { reason?: string }).reason), [reason]);
      assert.equal(r.outcome.kind, "failed");
      assert.equal(h.holds.specs.size, 0);
    });
  }
});

Deno.test("a MIG hold that failed device-missing binds once the instance exists", async () => {
  const h = harness();
  const a = hold("m", [["gpu.mig", `${G1}/gi3/ci0`]]);
  assert.equal((await h.pass({ assignments: [a] })).outcome.kind, "failed");
  h.gpu.inventory = {
    ...h.gpu.inventory,
    gpus: h.gpu.inventory.gpus.map((g) =>
      g.uuid === G1 ? { ...g, migInstances: [...g.migInstances, { uuid: "MIG-new", gi: 3, ci: 0, index: 2 }] } : g
    ),
  };
  const r = await h.pass({ assignments: [a] });
  assert.equal(r.outcome.kind, "converged");
  assert.deepEqual(h.holds.specs.get("m")!.env[0], "NVIDIA_VISIBLE_DEVICES=MIG-new");
  assert.deepEqual((r.events[0] as { cdi_devices?: readonly string[] }).cdi_devices, [`bcd.dev/gpu=${G1}_gi3_ci0`]);
});

Deno.test("a Kubernetes hold: no NVIDIA_VISIBLE_DEVICES, no slice even with limits, its limits still admitted", async () => {
  const h = harness();
  const a = hold("k", [["gpu", G0]], {
    binding: "BINDING_KUBERNETES",
    limits: { memory_bytes: 8 * GiB, cpu_millis: 2000 },
  });
  const r = await h.pass({ assignments: [a] });
  assert.equal(r.outcome.kind, "converged");
  const rec = h.holds.specs.get("k")!;
  assert.equal(rec.binding, "kubernetes");
  assert.deepEqual(rec.env, ["BCD_ALLOCATION_ID=k"]);
  assert.equal(rec.cgroupParent, undefined);
  assert.equal(h.slices.slices.size, 0);
  const big = hold("b", [["gpu", G2]], { limits: { memory_bytes: 56 * GiB } });
  const r2 = await h.pass({ assignments: [a, big] });
  assert.equal((r2.events[0] as { reason: string }).reason, "resources-exhausted", "the Kubernetes hold's 8 GiB count");
});

Deno.test("a hold with limits gets its slice before the CDI spec names it", async () => {
  const h = harness({ mps: true });
  const a = hold("s", [["gpu.slot", `${G0}/s0`], ["gpu.slot", `${G0}/s1`]], {
    limits: { cpu_millis: 4000, memory_bytes: 16 * GiB, cpus: "0-3", mems: "0" },
  });
  h.holds.failNext("write");
  const first = await h.pass({ assignments: [a] });
  assert.equal(first.outcome.kind, "progressing", "a failed write is retryable");
  assert.ok(h.slices.slices.has("bcd-alloc-s.slice"), "the slice was created before the spec write");
  assert.equal(first.events.length, 0);
  const r = await h.pass({ assignments: [a] });
  assert.equal(r.outcome.kind, "converged");
  const rec = h.holds.specs.get("s")!;
  assert.equal(rec.cgroupParent, "bcd-alloc-s.slice");
  assert.deepEqual(rec.env, [
    `NVIDIA_VISIBLE_DEVICES=${G0}`,
    "BCD_ALLOCATION_ID=s",
    "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps",
    "BCD_CGROUP_PARENT=bcd-alloc-s.slice",
  ]);
  assert.deepEqual(h.slices.slices.get("bcd-alloc-s.slice")!.settings, {
    allowedCpus: "0-3",
    allowedMemoryNodes: "0",
    cpuQuotaPercent: 400,
    memoryMaxBytes: 16 * GiB,
    memoryHighBytes: Math.floor(16 * GiB * 0.9),
  });
});

Deno.test("a pass that finds a held hold's slice missing creates it again", async () => {
  const h = harness();
  const a = hold("s", [["gpu", G0]], { limits: { memory_bytes: GiB } });
  await h.pass({ assignments: [a] });
  h.slices.slices.clear(); // a reboot dropped the runtime properties
  const r = await h.pass({ assignments: [a] }, 1);
  assert.deepEqual(r.actions.map((x) => x.kind), ["ensure-slice"]);
  assert.ok(h.slices.slices.has("bcd-alloc-s.slice"));
  assert.deepEqual(r.events, []);
});

Deno.test("a release removes spec and env, reports AllocationReleased, and keeps a busy slice until it empties", async () => {
  const h = harness();
  const a = hold("r", [["gpu", G0], ["gpu.mig", `${G1}/gi2/ci0`]], { limits: { cpu_millis: 1000 } });
  await h.pass({ assignments: [a] });
  h.slices.slices.get("bcd-alloc-r.slice")!.populated = true;
  const r = await h.pass({ assignments: [] });
  assert.deepEqual(r.events, [{
    type: "AllocationReleased",
    allocation_id: "r",
    generation: 2,
    cdi_devices: [`bcd.dev/gpu=${G0}`, `bcd.dev/gpu=${G1}_gi2_ci0`],
  }]);
  assert.equal(h.holds.specs.size + h.holds.envs.size, 0);
  assert.ok(h.slices.slices.has("bcd-alloc-r.slice"), "a release never kills a workload");
  assert.equal(r.outcome.kind, "converged");
  const still = await h.pass({ assignments: [] });
  assert.deepEqual(still.actions.map((x) => x.kind), ["remove-slice"], "every pass tries again");
  assert.ok(h.slices.slices.has("bcd-alloc-r.slice"));
  h.slices.slices.get("bcd-alloc-r.slice")!.populated = false;
  await h.pass(undefined);
  assert.equal(h.slices.slices.size, 0);
  assert.deepEqual((await h.pass(undefined)).actions, []);
});

Deno.test("bcd never drops a bound hold on its own, not when its GPU leaves the inventory", async () => {
  const h = harness();
  const a = hold("a", [["gpu", G3]]);
  await h.pass({ assignments: [a] });
  h.gpu.inventory = { gpus: h.gpu.inventory.gpus.filter((g) => g.uuid !== G3) };
  const r = await h.pass({ assignments: [a] }, 1);
  assert.deepEqual(r.actions, []);
  assert.ok(h.holds.specs.has("a"));
});

Deno.test("host admission refuses what does not fit with resources-exhausted; unreadable meminfo binds with a warning", async () => {
  const h = harness();
  const a = hold("x", [["gpu", G0]], { limits: { memory_bytes: 40 * GiB } });
  const b = hold("y", [["gpu", G2]], { limits: { memory_bytes: 40 * GiB } });
  const r = await h.pass({ assignments: [a, b] });
  assert.deepEqual(r.events.map((e) => e.type), ["AllocationBound", "AllocationFailed"]);
  assert.equal((r.events[1] as { reason: string }).reason, "resources-exhausted");
  assert.match((r.events[1] as { message: string }).message, /MiB of memory needed, \d+ MiB left on this host/);
  const h2 = harness();
  h2.hostMemory.value = undefined;
  const r2 = await h2.pass({ assignments: [a, b] });
  assert.deepEqual(r2.events.map((e) => e.type), ["AllocationBound", "AllocationBound"]);
  assert.ok(h2.log.lines.some((l) => l.level === "warn" && /without admission/.test(String(l.msg))));
});

Deno.test("an AllocationBound that cannot be journaled undoes the write, and the next pass binds again", async () => {
  const h = harness();
  h.events.failNext("emit");
  const a = hold("e", [["gpu", G0]]);
  const r = await h.pass({ assignments: [a] });
  assert.equal(r.outcome.kind, "progressing");
  assert.equal(h.holds.specs.size, 0);
  const r2 = await h.pass({ assignments: [a] });
  assert.deepEqual(r2.events.map((e) => e.type), ["AllocationBound"]);
});

Deno.test("with the journal's announced set, a crash between write and event loses neither Bound nor Released", async () => {
  const announced = new Set<string>();
  const h = harness({ announced });
  const a = hold("c", [["gpu", G0]]);
  await h.pass({ assignments: [a] });
  // the journal did not keep the event (crash right after the spec write)
  const r = await h.pass({ assignments: [a] }, 1);
  assert.deepEqual(r.events.map((e) => e.type), ["AllocationBound"]);
  announced.add("gone"); // bound once, its spec removed, the Released event lost
  const r2 = await h.pass({ assignments: [a] }, 1);
  assert.deepEqual(r2.events.map((e) => [e.type, e.allocation_id]), [["AllocationReleased", "gone"], [
    "AllocationBound",
    "c",
  ]]);
});

Deno.test("with the journal's announced set, a hold whose write was not announced and that is rewritten is announced", async () => {
  const announced = new Set<string>();
  const h = harness({ announced });
  await h.pass({ assignments: [hold("w", [["gpu", G0]], { env: ["X=1"] })] });
  // the crash lost the Bound event; the next spec changes only the env, so the hold is rewritten in place
  const r = await h.pass({ assignments: [hold("w", [["gpu", G0]], { env: ["X=2"] })] });
  assert.deepEqual(r.actions.map((x) => x.kind), ["rewrite", "announce-bound"]);
  assert.deepEqual(r.events.map((e) => [e.type, e.allocation_id]), [["AllocationBound", "w"]]);
  assert.ok(h.holds.specs.get("w")!.env.includes("X=2"));
});

Deno.test("a host without 1 GiB huge pages fails a hold that books them, terminally, naming the size; 2 MiB binds", async () => {
  const h = harness();
  h.hostMemory.value = {
    memTotalBytes: 64 * GiB,
    hugetlbBytes: 0,
    pages2Mi: { free: 512, reserved: 0 },
    hugePageSizes: [2 * 2 ** 20],
  };
  const big = hold("big", [["gpu", G0]], { limits: { hugepages_1gi: 2 } });
  const small = hold("small", [["gpu", G1]], { limits: { hugepages_2mi: 8 } });
  const r = await h.pass({ assignments: [big, small] });
  assert.equal(r.outcome.kind, "failed", "terminal: the section does not stay PROGRESSING");
  const failed = r.events.find((e) => e.type === "AllocationFailed") as { reason: string; message: string };
  assert.equal(failed.reason, "resources-exhausted");
  assert.match(failed.message, /this host has no 1 GiB huge pages \(it has 2 MiB\); the hold books 2 of them/);
  assert.ok(!h.holds.specs.has("big") && !h.slices.slices.has("bcd-alloc-big.slice"), "nothing was written for it");
  assert.ok(h.holds.specs.has("small") && h.slices.slices.has("bcd-alloc-small.slice"));
  const again = await h.pass({ assignments: [big, small] }, 1);
  assert.deepEqual(again.events, [], "reported once per generation");
  assert.equal(again.outcome.kind, "failed");
});

Deno.test("host memory unreadable: the slice manager's missing page size fails the hold terminally, nothing held", async () => {
  const h = harness();
  h.hostMemory.value = undefined; // the page sizes are unknown to the plan; the kernel finds the size missing
  h.slices.failNext(
    "apply",
    new PageSizeUnsupported("this host has no 1GB huge pages: the kernel offers no hugetlb.1GB.max"),
  );
  const r = await h.pass({ assignments: [hold("big", [["gpu", G0]], { limits: { hugepages_1gi: 1 } })] });
  assert.equal(r.outcome.kind, "failed");
  assert.deepEqual(r.events.map((e) => [e.type, (e as { reason?: string }).reason]), [
    ["AllocationFailed", "resources-exhausted"],
  ]);
  assert.match((r.events[0] as { message: string }).message, /no 1GB huge pages/);
  assert.equal(h.holds.specs.size, 0, "no CDI spec names a slice that could not be made");
});

Deno.test("an env file without its spec is removed; a bound hold whose env file went missing gets it back", async () => {
  const h = harness();
  const a = hold("v", [["gpu", G0]]);
  await h.pass({ assignments: [a] });
  h.holds.envs.delete("v");
  h.holds.envs.set("orphan", ["BCD_ALLOCATION_ID=orphan"]);
  const r = await h.pass({ assignments: [a] }, 1);
  assert.deepEqual(r.actions.map((x) => x.kind).sort(), ["remove-env", "rewrite"]);
  assert.ok(h.holds.envs.has("v") && !h.holds.envs.has("orphan"));
  assert.deepEqual(r.events, []);
});

Deno.test("an unreadable spec that is not wanted is removed without an event", async () => {
  const h = harness();
  h.holds.unreadable.push({ allocationId: "bad", path: "/etc/cdi/bcd-bad.json", problem: "not JSON" });
  const r = await h.pass(undefined);
  assert.deepEqual(r.actions.map((x) => x.kind), ["remove-unreadable"]);
  assert.deepEqual(r.events, []);
  assert.equal(h.holds.unreadable.length, 0);
});

Deno.test("an allocation assigned twice fails the second copy", async () => {
  const h = harness();
  const r = await h.pass({ assignments: [hold("d", [["gpu", G0]]), hold("d", [["gpu", G2]])] });
  assert.deepEqual(r.events.map((e) => e.type), ["AllocationBound", "AllocationFailed"]);
  assert.equal(h.holds.specs.get("d")!.devices[0]!.atom, G0);
});

Deno.test("the planner is pure: planning twice over the same observation gives the same actions", async () => {
  const h = harness();
  const ctx = { generation: 1, log: silentLogger() };
  const o = await h.conv.observe(ctx);
  const s = { assignments: [hold("p", [["gpu", G0]]), hold("q", [["gpu", G0]])] };
  assert.deepEqual(h.conv.plan(s, o), h.conv.plan(s, o));
});

Deno.test("an unreadable GPU inventory holds back new holds (retryable) but not releases or an empty section", async () => {
  const h = harness();
  const a = hold("a", [["gpu", G0]]);
  await h.pass({ assignments: [a] });
  const broken = { query: () => Promise.reject(new Error("nvidia-smi: not found")), reset: () => Promise.resolve() };
  Object.assign(h.gpu, broken);
  const r = await h.pass({ assignments: [a, hold("b", [["gpu", G2]]), hold("c", [["nic", "x"]])] });
  assert.equal(r.outcome.kind, "progressing");
  assert.deepEqual(r.actions.map((x) => x.kind), ["retry", "fail"], "an unsupported class still fails at once");
  assert.deepEqual(r.events.map((e) => e.type), ["AllocationFailed"]);
  const rel = await h.pass({ assignments: [] });
  assert.deepEqual(rel.events.map((e) => e.type), ["AllocationReleased"]);
  assert.deepEqual((await h.pass(undefined)).outcome, { kind: "converged" });
});
