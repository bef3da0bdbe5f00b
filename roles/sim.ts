/**
 * The `sim` role's entry point: the node role on simulated hardware (an HGX board of 8 MIG-capable GPUs behind a
 * file-backed fake `nvidia-smi`, a simulated host whose reboot restarts the process). Wiring only.
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
import { FileRuntime } from "../runtimes/fakehw/file_runtime.ts";
import { InstancesConverger } from "../core/converge/instances/mod.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import { agentCommands } from "./_agent_cli.ts";

/** The `sim` role's subcommands beyond `version` and `help`. */
const SIM_MEMORY_BYTES = 2048 * 2 ** 30;
const _devices = new Map<string, DevicePorts>();
/** The sim's devices: the fake HGX board, CDI specs and env files under the data dir, a simulated cgroup tree. */
function _devicesOf(dataDir: string): DevicePorts {
  let d = _devices.get(dataDir);
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
    _devices.set(dataDir, d);
  }
  return d;
}

const _instances = new Map<string, InstancesConverger>();
function _instancesOf(dataDir: string): InstancesConverger {
  let c = _instances.get(dataDir);
  if (!c) {
    c = new InstancesConverger([new FileRuntime(`${dataDir}/sim-runtime`)]);
    _instances.set(dataDir, c);
  }
  return c;
}

export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "sim",
    // host kinds, plus gpu.reset and diag.nvml where the role has devices (registerGpuKinds)
    handles: ["inventory.refresh", "logs.collect", "node.reboot", "gpu.reset", "diag.nvml"],
    defaultDataDir: "/var/lib/bcd-sim",
    capabilities: ["devices.limits", "binding.kubernetes"],
    devices: (ctx) => _devicesOf(ctx.dataDir),
    bootIdFile: simBootIdFile,
    handlers(ctx) {
      const reg = new HandlerRegistry();
      const handlers = hostKindHandlers({
        journal: ctx.journal,
        logRing: ctx.logRing,
        gpus: _devicesOf(ctx.dataDir).gpu,
        host: simHostReader(ctx.hostname, ctx.bootId),
        rebooter: simRebooter(),
      });
      for (const h of handlers) reg.register(h);
      return reg;
    },
    convergers: (ctx) => [_instancesOf(ctx.dataDir)],
    instances: (ctx) => () => _instancesOf(ctx.dataDir).listing(),
  }),
};

if (import.meta.main) {
  Deno.exit(await runCli("sim", Deno.args, COMMANDS));
}
