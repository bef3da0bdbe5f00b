/**
 * The sim role's wiring: the node role on simulated hardware (an HGX board of 8 MIG-capable GPUs behind a
 * file-backed fake `nvidia-smi`, CDI specs and env files under the data dir, a simulated cgroup tree, a file-backed
 * instance runtime, a simulated host whose reboot restarts the process). Wiring only.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { simBootIdFile, simHostReader, simRebooter } from "../runtimes/fakehw/sim_host.ts";
import { FakeGpuTool } from "../runtimes/nvidia/mod.ts";
import { CdiHoldStore } from "../runtimes/cdi/mod.ts";
import { SimSliceManager } from "../runtimes/cgroup/mod.ts";
import type { DevicePorts } from "./_devices.ts";
import type { Rebooter } from "../core/commands/kind_handlers/mod.ts";
import { FileRuntime } from "../runtimes/fakehw/file_runtime.ts";
import { InstancesConverger } from "../core/converge/instances/mod.ts";
import type { RoleWiring } from "./_agent_cli.ts";

/** The sim's default data dir (inside its own write grant). */
export const SIM_DATA_DIR = "/var/lib/bcd-sim";

const SIM_MEMORY_BYTES = 2048 * 2 ** 30;

/** What a sim "process" may differ in: an in-process fleet reboots one node, not the whole process. */
export interface SimWiringOptions {
  /** How `node.reboot` reboots (default: the process ends with the sim's reboot status). */
  readonly rebooter?: Rebooter;
}

/**
 * The sim role's wiring: the fake HGX board, CDI specs and env files under the data dir, a simulated cgroup tree and a
 * file-backed instance runtime. Each call is one simulated process's worth of state (its device ports and instances
 * converger, by data dir): an in-process fleet builds one per node start, so a restarted node keeps nothing in memory.
 */
export function simWiring(o: SimWiringOptions = {}): RoleWiring {
  const devices = new Map<string, DevicePorts>();
  const devicesOf = (dataDir: string): DevicePorts => {
    let d = devices.get(dataDir);
    if (!d) {
      const gpu = new FakeGpuTool(`${dataDir}/fake-gpus.json`);
      d = {
        gpu: {
          query: async () => (await FakeGpuTool.create(gpu.path), await gpu.query()),
          reset: async (uuid) => (await FakeGpuTool.create(gpu.path), await gpu.reset(uuid)),
        },
        holds: new CdiHoldStore({ cdiDir: `${dataDir}/cdi`, envDir: `${dataDir}/run/allocations` }),
        slices: new SimSliceManager(`${dataDir}/cgroup`),
        hostMemory: { read: () => Promise.resolve({ memTotalBytes: SIM_MEMORY_BYTES, hugetlbBytes: 0 }) },
        mpsPipeDirectory: `${dataDir}/run/nvidia-mps`,
      };
      devices.set(dataDir, d);
    }
    return d;
  };
  const instances = new Map<string, InstancesConverger>();
  const instancesOf = (dataDir: string): InstancesConverger => {
    let c = instances.get(dataDir);
    if (!c) {
      c = new InstancesConverger([new FileRuntime(`${dataDir}/sim-runtime`)]);
      instances.set(dataDir, c);
    }
    return c;
  };
  return {
    role: "sim",
    // host kinds, plus gpu.reset and diag.nvml where the role has devices (registerGpuKinds)
    handles: ["inventory.refresh", "logs.collect", "node.reboot", "gpu.reset", "diag.nvml"],
    defaultDataDir: SIM_DATA_DIR,
    capabilities: ["devices.limits", "binding.kubernetes"],
    devices: (ctx) => devicesOf(ctx.dataDir),
    bootIdFile: simBootIdFile,
    handlers(ctx) {
      const reg = new HandlerRegistry();
      const handlers = hostKindHandlers({
        journal: ctx.journal,
        logRing: ctx.logRing,
        gpus: devicesOf(ctx.dataDir).gpu,
        host: simHostReader(ctx.hostname, ctx.bootId),
        rebooter: o.rebooter ?? simRebooter(),
      });
      for (const h of handlers) reg.register(h);
      return reg;
    },
    convergers: (ctx) => [instancesOf(ctx.dataDir)],
    instances: (ctx) => () => instancesOf(ctx.dataDir).listing(),
  };
}
