/**
 * GPUs and devices agree (000 §Instances, §Device assignments): the devices and instances convergers wired as the node
 * wires them (`roles/_agent_cli.ts`), over in-memory runtimes and a fake inventory with GPUs. A GPU passed through to a
 * running or paused domain is busy for new holds (`overlap`, naming the instance) and for `gpu.reset` (`gpu-busy`);
 * a stopped domain's GPU is free; a bound hold's memory limit counts in the instances' start admission.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { DevicesMemory } from "../devices/apply.ts";
import type { DeviceAssignment } from "../devices/assignment.ts";
import { DevicesConverger } from "../devices/converger.ts";
import {
  MemoryEventSink,
  MemoryHoldStore,
  MemorySliceManager,
  StaticGpuTool,
  StaticHostMemory,
} from "../devices/fakes.ts";
import { GpuKindError, gpuReset } from "../devices/gpu_reset.ts";
import { sampleInventory, sampleUuid } from "../devices/inventory_testing.ts";
import { normalCommitmentBytes } from "./admission.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";

const GiB = 2 ** 30;
const [G0, G1] = [0, 1].map(sampleUuid) as [string, string];

function node(memTotalBytes = 256 * GiB) {
  const holds = new MemoryHoldStore();
  const events = new MemoryEventSink();
  const gpu = new StaticGpuTool(sampleInventory());
  const hostMemory = new StaticHostMemory({ memTotalBytes, hugetlbBytes: 0 });
  const rt = new MemoryRuntime("libvirt-kvm");
  let devices: DevicesConverger | undefined = undefined;
  const instances = new InstancesConverger([rt], {
    memory: hostMemory,
    holdsCommittedBytes: () => Promise.resolve(devices?.boundCommittedBytes() ?? 0),
  });
  devices = new DevicesConverger({
    gpu,
    holds,
    slices: new MemorySliceManager(),
    hostMemory,
    events,
    memory: new DevicesMemory(),
    dirExists: () => Promise.resolve(false),
    passthrough: () => instances.passthrough(),
    domainCommittedBytes: () => instances.committedBytes(),
  });
  const engine = new ConvergenceEngine({ convergers: [devices, instances], log: silentLogger() });
  let gen = 0;
  const pass = async (assignments: DeviceAssignment[], vms: unknown[]) => {
    engine.hold({
      generation: ++gen,
      specHash: `h${gen}`,
      sections: { devices: { assignments }, instances: { instances: vms } },
    });
    const s = await engine.pass();
    return {
      devices: s.sections.find((x) => x.section === "devices")!,
      inst: s.sections.find((x) => x.section === "instances")!,
    };
  };
  const reset = (uuid: string) =>
    gpuReset({ gpu_uuids: [uuid] }, {
      gpu,
      holds: () => holds.list(),
      passthrough: () => instances.passthrough(),
      conditions: { clearXid: () => {} },
    });
  return { holds, events, gpu, rt, instances, pass, reset };
}

const hold = (id: string, gpu: string, memory = 0): DeviceAssignment => ({
  allocation_id: id,
  reservation_id: `res-${id}`,
  binding: "BINDING_HOLD",
  devices: [{ class: "gpu", id: gpu }],
  ...(memory ? { limits: { memory_bytes: memory } } : {}),
});
const vm = (id: string, state: number, gpus: string[], memory = 4 * GiB) => ({
  id,
  allocation_id: `alloc-${id}`,
  runtime: "libvirt-kvm",
  state,
  vcpus: 1,
  memory_bytes: memory,
  gpus: gpus.map((uuid) => ({ uuid, pci_bus_id: "00000000:17:00.0" })),
});

Deno.test("a GPU passed through to a running or paused domain is busy for holds (overlap) and gpu.reset (gpu-busy); a stopped one is free", async (t) => {
  const rows: Array<[string, number, boolean]> = [["running", 1, true], ["paused", 2, true], ["stopped", 3, false]];
  for (const [what, state, busy] of rows) {
    await t.step(`the domain is ${what}`, async () => {
      const n = node();
      await n.pass([], [vm("vm1", state, [G0])]);
      assert.deepEqual(n.instances.passthrough(), busy ? [{ gpuUuid: G0, instance: "vm1" }] : []);
      const r = await n.pass([hold("a1", G0)], [vm("vm1", state, [G0])]);
      const failed = n.events.events.filter((e) => e.type === "AllocationFailed");
      if (busy) {
        assert.equal(r.devices.state, "FAILED");
        assert.deepEqual(failed.map((e) => [e.allocation_id, e.reason]), [["a1", "overlap"]]);
        assert.match(String(failed[0]?.message), new RegExp(`GPU ${G0} is passed through to instance vm1`));
        await assert.rejects(
          n.reset(G0),
          (e) => e instanceof GpuKindError && e.reason === "gpu-busy" && /vm1/.test(e.message),
        );
      } else {
        assert.equal(r.devices.state, "CONVERGED");
        assert.deepEqual(failed, []);
        assert.deepEqual((await n.holds.list()).holds.map((h) => h.allocationId), ["a1"]);
      }
      await n.reset(G1);
      assert.deepEqual(n.gpu.resets, [G1], "a GPU no hold and no domain uses resets");
    });
  }
});

Deno.test("a bound hold's memory limit counts in the instances' start admission, and a running domain's in hold admission", async () => {
  // Admission leaves MemTotal - 1 GiB headroom: 20 GiB here. A 12 GiB hold and a VM of 8 GiB (+ overhead) do not
  // both fit; either alone does.
  const n = node(21 * GiB);
  const vmMem = 8 * GiB;
  assert.ok(normalCommitmentBytes(vmMem, "none") + 12 * GiB > 20 * GiB);
  const r1 = await n.pass([hold("a1", G1, 12 * GiB)], [vm("vm1", 1, [], vmMem)]);
  assert.equal(r1.devices.state, "CONVERGED");
  assert.equal(r1.inst.state, "PROGRESSING");
  assert.equal(r1.inst.reason, "ResourcesExhausted");
  assert.match(r1.inst.message, /vm1: ResourcesExhausted: \d+ MiB of memory needed, \d+ MiB left on this host/);
  assert.equal(n.rt.domains.get("vm1")?.state, "stopped");
  const r2 = await n.pass([], [vm("vm1", 1, [], vmMem)]);
  assert.equal(r2.inst.state, "CONVERGED", "the hold released: the VM starts");
  assert.equal(n.rt.domains.get("vm1")?.state, "running");
  const r3 = await n.pass([hold("a2", G1, 12 * GiB)], [vm("vm1", 1, [], vmMem)]);
  assert.equal(r3.devices.state, "FAILED", "the running VM's commitment counts against the new hold");
  const last = n.events.events.at(-1);
  assert.equal(last?.type === "AllocationFailed" ? last.reason : last?.type, "resources-exhausted");
});
