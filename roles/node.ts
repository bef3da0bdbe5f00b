/**
 * The `node` role's entry point: GPU and VPS hosts. Wiring only: the host's real inventory (sysfs, `nvidia-smi`),
 * the init system's reboot, HTTPS log upload, and the image checks.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { NvidiaSmi } from "../runtimes/nvidia/mod.ts";
import { CdiHoldStore } from "../runtimes/cdi/mod.ts";
import { CgroupfsSliceManager, ProcHostMemory, SystemdSliceManager } from "../runtimes/cgroup/mod.ts";
import type { ResolvedAgentConfig } from "../core/config/mod.ts";
import type { DevicePorts } from "./_devices.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import { agentCommands } from "./_agent_cli.ts";
import { IMAGE_COMMAND } from "./node_image_cli.ts";
import { JOURNAL_COMMAND } from "./node_journal_cli.ts";

/** Whether systemd runs this host (its runtime directory exists). */
function _systemd(): boolean {
  try {
    return Deno.statSync("/run/systemd/system").isDirectory;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable) return false;
    throw e;
  }
}

/** The host's devices: `nvidia-smi`, CDI specs in `/etc/cdi`, env files under the run dir, the hold slices. */
function _devices(config: ResolvedAgentConfig): DevicePorts {
  const d = config.devices;
  return {
    gpu: new NvidiaSmi({ binary: d.nvidiaSmi }),
    holds: new CdiHoldStore({ cdiDir: d.cdiDir, envDir: `${d.runDir}/allocations` }),
    slices: _systemd()
      ? new SystemdSliceManager({ cgroupRoot: d.cgroupRoot })
      : new CgroupfsSliceManager({ root: d.cgroupRoot }),
    hostMemory: new ProcHostMemory(),
  };
}

/** The `node` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "node",
    defaultDataDir: "/var/lib/bcd",
    capabilities: ["devices.limits", "binding.kubernetes"],
    devices: (ctx) => _devices(ctx.config),
    handlers(ctx) {
      const gpus = new NvidiaSmi({ binary: ctx.config.devices.nvidiaSmi });
      const reg = new HandlerRegistry();
      for (const h of hostKindHandlers({ journal: ctx.journal, logRing: ctx.logRing, gpus })) reg.register(h);
      return reg;
    },
  }),
  image: IMAGE_COMMAND,
  journal: JOURNAL_COMMAND,
};

if (import.meta.main) {
  Deno.exit(await runCli("node", Deno.args, COMMANDS));
}
