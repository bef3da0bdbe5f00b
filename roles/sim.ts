/**
 * The `sim` role's entry point: the node role on simulated hardware (an HGX board of 8 MIG-capable GPUs behind a
 * file-backed fake `nvidia-smi`, a simulated host whose reboot restarts the process). Wiring only.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import {
  daemonLogSource,
  inventoryRefreshHandler,
  journalSummarySource,
  logsCollectHandler,
  nodeRebootHandler,
} from "../core/commands/kind_handlers/mod.ts";
import { HttpsUploader } from "../runtimes/host/mod.ts";
import { simHostReader, simRebooter } from "../runtimes/fakehw/sim_host.ts";
import { FakeGpuTool } from "../runtimes/nvidia/mod.ts";
import { FileRuntime } from "../runtimes/fakehw/file_runtime.ts";
import { InstancesConverger } from "../core/converge/instances/mod.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import { agentCommands } from "./_agent_cli.ts";

/** The `sim` role's subcommands beyond `version` and `help`. */
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
    defaultDataDir: "/var/lib/bcd-sim",
    capabilities: ["devices.limits", "binding.kubernetes"],
    handlers(ctx) {
      const gpus = new FakeGpuTool(`${ctx.dataDir}/fake-gpus.json`);
      return new HandlerRegistry()
        .register(inventoryRefreshHandler({
          host: simHostReader(ctx.hostname, ctx.bootId),
          gpus: {
            query: async () => {
              await FakeGpuTool.create(gpus.path);
              return await gpus.query();
            },
          },
        }))
        .register(logsCollectHandler({
          sources: [daemonLogSource(ctx.logRing), journalSummarySource(ctx.journal)],
          uploader: new HttpsUploader(),
        }))
        .register(nodeRebootHandler({ rebooter: simRebooter() }));
    },
    convergers: (ctx) => [_instancesOf(ctx.dataDir)],
    instances: (ctx) => () => _instancesOf(ctx.dataDir).report(),
  }),
};

if (import.meta.main) {
  Deno.exit(await runCli("sim", Deno.args, COMMANDS));
}
