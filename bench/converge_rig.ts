/**
 * The idle convergence rig of `bench:converge` and `bench:converge-ab`: a spec of 64 slot holds on the sim's 8 fake
 * GPUs (CDI hold store and cgroup tree in a temp directory) and 100 instances on the file-backed runtime, converged by
 * one first pass. It is built from the modules it is handed, so that the A/B bench builds one from each checkout.
 *
 * @module
 */
import type { bcd as Bcd } from "../proto/mod.ts";
import type { ConvergenceEngine as Engine } from "../core/converge/engine.ts";
import type * as Devices from "../core/converge/devices/mod.ts";
import type { InstancesConverger as Instances } from "../core/converge/instances/mod.ts";
import type { silentLogger as SilentLogger } from "../core/log/mod.ts";
import type { CdiHoldStore as Holds } from "../runtimes/cdi/mod.ts";
import type { SimSliceManager as Slices } from "../runtimes/cgroup/mod.ts";
import type { FileRuntime as Runtime } from "../runtimes/fakehw/file_runtime.ts";
import type * as Nvidia from "../runtimes/nvidia/mod.ts";

/** The modules a rig is built from: a checkout's own. */
export interface RigModules {
  readonly bcd: typeof Bcd;
  readonly ConvergenceEngine: typeof Engine;
  readonly DevicesConverger: typeof Devices.DevicesConverger;
  readonly DevicesMemory: typeof Devices.DevicesMemory;
  readonly InstancesConverger: typeof Instances;
  readonly silentLogger: typeof SilentLogger;
  readonly CdiHoldStore: typeof Holds;
  readonly SimSliceManager: typeof Slices;
  readonly FileRuntime: typeof Runtime;
  readonly FakeGpuTool: typeof Nvidia.FakeGpuTool;
  readonly hgxInventory: typeof Nvidia.hgxInventory;
}

/** A rig after its first pass. */
export interface ConvergeRig {
  readonly dir: string;
  readonly engine: Engine;
  readonly devices: Devices.DevicesConverger;
  readonly instances: Instances;
  readonly gpu: Nvidia.FakeGpuTool;
  readonly assignments: Bcd.v1.DeviceAssignment.$Properties[];
  readonly vms: Bcd.v1.InstanceSpec.$Properties[];
  /** The first pass's duration (ms) and the events it produced. */
  readonly firstMs: number;
  readonly events: readonly unknown[];
}

/**
 * Builds the rig in a new temp directory and runs its first pass; throws when that pass does not converge. With
 * `limits`, every hold carries CPU and memory limits, so each has its hold slice.
 */
export async function convergeRig(
  m: RigModules,
  opts: { limits?: boolean; prefix?: string } = {},
): Promise<ConvergeRig> {
  const dir = await Deno.makeTempDir({ prefix: opts.prefix ?? "bcd-bench-converge-" });
  const gpu = await m.FakeGpuTool.create(`${dir}/gpus.json`, m.hgxInventory({}));
  const gpus = m.hgxInventory({}).gpus.map((g) => g.uuid);
  const events: unknown[] = [];
  const devices = new m.DevicesConverger({
    gpu,
    holds: new m.CdiHoldStore({ cdiDir: `${dir}/cdi`, envDir: `${dir}/env` }),
    slices: new m.SimSliceManager(`${dir}/cgroup`),
    hostMemory: { read: () => Promise.resolve({ memTotalBytes: 2048 * 2 ** 30, hugetlbBytes: 0 }) },
    events: { emit: (e) => (events.push(e), Promise.resolve()) },
    memory: new m.DevicesMemory(),
    mpsPipeDirectory: `${dir}/mps`,
  });
  const instances = new m.InstancesConverger([new m.FileRuntime(`${dir}/runtime`)]);
  const engine = new m.ConvergenceEngine({ convergers: [devices, instances], log: m.silentLogger() });
  const assignments = Array.from({ length: 64 }, (_, i): Bcd.v1.DeviceAssignment.$Properties => ({
    allocation_id: `alloc-${i}`,
    reservation_id: `res-${i}`,
    binding: m.bcd.v1.DeviceAssignment.Binding.BINDING_HOLD,
    devices: [{ class: "gpu.slot", id: `${gpus[i % 8]}/s${Math.floor(i / 8)}` }],
    ...(opts.limits ? { limits: { cpu_millis: 2000, memory_bytes: 8 * 2 ** 30 } } : {}),
  }));
  const vms = Array.from({ length: 100 }, (_, i): Bcd.v1.InstanceSpec.$Properties => ({
    id: `vm-${i}`,
    runtime: "sim",
    state: m.bcd.v1.InstanceSpec.State.RUNNING,
    vcpus: 2,
    memory_bytes: 2 ** 30,
  }));
  engine.hold({
    generation: 1,
    specHash: "bench",
    sections: { devices: { assignments }, instances: { instances: vms } },
  });
  const t = performance.now();
  const first = await engine.pass();
  const firstMs = performance.now() - t;
  const bad = first.sections.filter((s) => s.state !== "CONVERGED");
  if (bad.length > 0 || first.observed_generation !== 1) {
    throw new Error(`first pass did not converge: ${JSON.stringify(bad)}`);
  }
  return { dir, engine, devices, instances, gpu, assignments, vms, firstMs, events };
}
