/**
 * The node's host ports over the helper answer what the direct runtimes answer on the same roots; failures are
 * `helper: …` errors; the devices converger binds and releases holds through the helper.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { DevicesMemory } from "../../core/converge/devices/apply.ts";
import { DevicesConverger } from "../../core/converge/devices/converger.ts";
import { MemoryEventSink, StaticGpuTool } from "../../core/converge/devices/fakes.ts";
import { PageSizeUnsupported } from "../../core/converge/devices/ports.ts";
import { sampleInventory, sampleUuid } from "../../core/converge/devices/inventory_testing.ts";
import { HelperError } from "../../core/helper/mod.ts";
import { ProcHostMemory } from "../cgroup/host_memory.ts";
import { ProcMemoryPressure } from "../cgroup/memory_pressure.ts";
import { sliceDir } from "../cgroup/cgroup_files.ts";
import { setSimPopulated } from "../cgroup/sim_slices.ts";
import { SysfsHostInventory } from "../host/inventory.ts";
import {
  helperBootId,
  HelperHoldStore,
  HelperHostInventory,
  HelperHostMemory,
  HelperMemoryPressure,
  HelperRebooter,
  HelperSliceManager,
} from "./ports.ts";
import { startTestHelper, TEST_BOOT_ID, type TestHelper } from "./helper_testing.ts";

Deno.test("host ports through the helper answer what the direct readers answer on the same roots", async (t) => {
  const h = await startTestHelper();
  try {
    await t.step("boot id", async () => {
      assert.equal(await helperBootId(h.client), TEST_BOOT_ID);
    });
    await t.step("host memory (meminfo, huge page pools per node)", async () => {
      const direct = await new ProcHostMemory({ proc: h.proc, sys: h.sys }).read();
      const via = await new HelperHostMemory(h.client).read();
      assert.deepEqual(JSON.parse(JSON.stringify(via)), JSON.parse(JSON.stringify(direct)));
      assert.equal(via.memTotalBytes, 65536000 * 1024);
      assert.equal(via.pages2Mi?.freeByNode?.[1], 256, "per-node pools survive the JSON (keys as numbers)");
      assert.ok(Array.isArray(via.hugePageSizes), "the host's page sizes come through the helper");
      assert.deepEqual(via.hugePageSizes, direct.hugePageSizes);
    });
    await t.step("the balloon loop's readings (meminfo, PSI absent from the fake tree, then present)", async () => {
      const via = new HelperMemoryPressure(h.client);
      assert.deepEqual(await via.read(), {
        memTotalBytes: 65536000 * 1024,
        memAvailableBytes: 40000000 * 1024,
        someAvg10: null,
      });
      await Deno.mkdir(`${h.proc}/pressure`, { recursive: true });
      await Deno.writeTextFile(`${h.proc}/pressure/memory`, "some avg10=11.25 avg60=2.00 avg300=0.10 total=5\n");
      assert.equal((await via.read()).someAvg10, 11.25);
      assert.deepEqual(await via.read(), await new ProcMemoryPressure(h.proc).read());
      await assert.rejects(
        h.client.call("host.memory_pressure", { path: "/etc" } as never),
        (e) => e instanceof HelperError && e.code === "unknown-field",
      );
    });
    await t.step("host inventory", async () => {
      const roots = { proc: h.proc, sys: h.sys, etc: `${h.root}/etc`, dev: `${h.root}/dev`, interfaces: () => [] };
      const direct = await new SysfsHostInventory(roots).read();
      const via = await new HelperHostInventory(h.client).read();
      assert.deepEqual(via, direct);
      assert.equal(via.hostname, "helper-test");
      assert.equal(via.cpu?.threads, 4);
      assert.deepEqual(via.numa_nodes?.map((n) => n.cpus), ["0-1", "2-3"]);
    });
    await t.step("a GPU's NUMA node, and none for a device sysfs does not know", async () => {
      assert.deepEqual(await h.client.call("pci.numa_node", { pciBusId: "00000000:9A:00.0" }), { numaNode: 1 });
      assert.deepEqual(await h.client.call("pci.numa_node", { pciBusId: "0000:01:00.0" }), { numaNode: null });
    });
    await t.step("node.reboot reaches the (injected) rebooter with its reason; a failure is helper: …", async () => {
      await new HelperRebooter(h.client).reboot("requested");
      assert.deepEqual(h.reboots, ["requested"]);
      (h.backends.rebooter as { reboot: (r: string) => Promise<void> }).reboot = () =>
        Promise.reject(new Error("the init system refused to reboot (systemctl reboot: exit 1)"));
      await assert.rejects(new HelperRebooter(h.client).reboot("again"), (e) => {
        assert.ok(e instanceof HelperError);
        assert.equal(e.code, "failed");
        assert.equal(e.message, "helper: node.reboot: the init system refused to reboot (systemctl reboot: exit 1)");
        return true;
      });
    });
  } finally {
    await h.close();
  }
});

Deno.test("the devices converger binds and releases holds through the helper: specs, env files and slices", async () => {
  const h = await startTestHelper();
  try {
    const events = new MemoryEventSink();
    const slices = new HelperSliceManager(h.client);
    const conv = new DevicesConverger({
      gpu: new StaticGpuTool(sampleInventory()),
      holds: new HelperHoldStore(h.client),
      slices,
      hostMemory: new HelperHostMemory(h.client),
      events,
      memory: new DevicesMemory(),
      dirExists: () => Promise.resolve(false),
    });
    const ctx = (g: number) => ({ generation: g, log: silentLogger() });
    const section = {
      assignments: [
        {
          allocation_id: "a1",
          reservation_id: "r1",
          binding: "BINDING_HOLD",
          devices: [{ class: "gpu", id: sampleUuid(0) }],
          limits: { cpu_millis: 2000, memory_bytes: 2 ** 30, cpus: "0-1" },
        },
      ],
    };
    assert.deepEqual(await conv.apply(conv.plan(section, await conv.observe(ctx(1))), section, ctx(1)), {
      kind: "converged",
    });
    assert.ok((await Deno.stat(`${h.cdiDir}/bcd-a1.json`)).isFile);
    assert.match(await Deno.readTextFile(`${h.envDir}/a1.env`), /BCD_CGROUP_PARENT=bcd-alloc-a1\.slice/);
    assert.equal(await Deno.readTextFile(`${sliceDir(h.cgroupRoot, "bcd-alloc-a1.slice")}/cpuset.cpus`), "0-1");
    assert.deepEqual(conv.plan(section, await conv.observe(ctx(1))), [], "read back through the helper: nothing to do");
    await setSimPopulated(h.cgroupRoot, "bcd-alloc-a1.slice", false);
    await conv.apply(conv.plan({ assignments: [] }, await conv.observe(ctx(2))), undefined, ctx(2));
    assert.deepEqual((await new HelperHoldStore(h.client).list()).holds, []);
    assert.deepEqual(await slices.list(), []);
    assert.deepEqual(events.events.map((e) => e.type), ["AllocationBound", "AllocationReleased"]);
    const ops = new Set(h.logs.filter((l) => l.msg === "helper: op").map((l) => l.op));
    for (const op of ["holds.list", "slice.list", "host.memory", "file.write", "slice.apply", "file.remove"]) {
      assert.ok(ops.has(op), `the converger went through ${op}`);
    }
  } finally {
    await h.close();
  }
});

/** The devices converger with every host port through the test helper. */
function helperConverger(h: TestHelper, events: MemoryEventSink): DevicesConverger {
  return new DevicesConverger({
    gpu: new StaticGpuTool(sampleInventory()),
    holds: new HelperHoldStore(h.client),
    slices: new HelperSliceManager(h.client),
    hostMemory: new HelperHostMemory(h.client),
    events,
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(false),
  });
}

Deno.test("on a host without 1 GiB huge pages, a hold booking them fails terminally through the helper, naming the size", async () => {
  const h = await startTestHelper();
  try {
    await Deno.remove(`${h.sys}/kernel/mm/hugepages/hugepages-1048576kB`, { recursive: true });
    for (const n of [0, 1]) {
      await Deno.remove(`${h.sys}/devices/system/node/node${n}/hugepages/hugepages-1048576kB`, { recursive: true });
    }
    const events = new MemoryEventSink();
    const conv = helperConverger(h, events);
    const section = {
      assignments: [{
        allocation_id: "big",
        reservation_id: "r1",
        binding: "BINDING_HOLD",
        devices: [{ class: "gpu", id: sampleUuid(0) }],
        limits: { hugepages_1gi: 1 },
      }],
    };
    const ctx = { generation: 1, log: silentLogger() };
    const out = await conv.apply(conv.plan(section, await conv.observe(ctx)), section, ctx);
    assert.equal(out.kind, "failed");
    const [failed] = events.events as { type: string; reason: string; message: string }[];
    assert.deepEqual([failed?.type, failed?.reason], ["AllocationFailed", "resources-exhausted"]);
    assert.match(failed!.message, /no 1 GiB huge pages \(it has 2 MiB\)/);
    const ops = h.logs.filter((l) => l.msg === "helper: op").map((l) => l.op);
    assert.ok(!ops.includes("slice.apply") && !ops.includes("file.write"), "nothing was written for it");
  } finally {
    await h.close();
  }
});

Deno.test("a page size the helper's kernel lacks comes back `unsupported`: the hold fails terminally, not retried", async () => {
  const h = await startTestHelper();
  try {
    await Deno.remove(`${h.proc}/meminfo`); // the host's page sizes are unknown to the plan
    h.backends.slices.apply = () =>
      Promise.reject(new PageSizeUnsupported("this host has no 1GB huge pages: the kernel offers no hugetlb.1GB.max"));
    const events = new MemoryEventSink();
    const conv = helperConverger(h, events);
    const section = {
      assignments: [{
        allocation_id: "big",
        reservation_id: "r1",
        binding: "BINDING_HOLD",
        devices: [{ class: "gpu", id: sampleUuid(0) }],
        limits: { hugepages_1gi: 1 },
      }],
    };
    const ctx = { generation: 1, log: silentLogger() };
    const out = await conv.apply(conv.plan(section, await conv.observe(ctx)), section, ctx);
    assert.equal(out.kind, "failed");
    assert.deepEqual(events.events.map((e) => [e.type, (e as { reason?: string }).reason]), [
      ["AllocationFailed", "resources-exhausted"],
    ]);
    assert.match((events.events[0] as { message: string }).message, /^helper: slice\.apply: this host has no 1GB/);
    assert.deepEqual((await new HelperHoldStore(h.client).list()).holds, []);
  } finally {
    await h.close();
  }
});

Deno.test("a failed write through the helper is a retryable error of the pass, named helper: …", async () => {
  const h = await startTestHelper();
  try {
    // The helper's disk is full: the spec write fails in root's store.
    h.backends.holds.writeSpec = () => Promise.reject(new Error("No space left on device (os error 28)"));
    const conv = helperConverger(h, new MemoryEventSink());
    const section = {
      assignments: [{
        allocation_id: "a1",
        reservation_id: "r1",
        binding: "BINDING_HOLD",
        devices: [{ class: "gpu", id: sampleUuid(0) }],
      }],
    };
    const ctx = { generation: 1, log: silentLogger() };
    const out = await conv.apply(conv.plan(section, await conv.observe(ctx)), section, ctx);
    assert.equal(out.kind, "progressing", "retryable: the section stays PROGRESSING");
    assert.match(
      (out as { message: string }).message,
      /helper: file\.write: No space left on device/,
      "the action's error is the helper's",
    );
    assert.equal((out as { reason: string }).reason, "ActionFailed");
  } finally {
    await h.close();
  }
});
