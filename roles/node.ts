/**
 * The `node` role's entry point: GPU and VPS hosts. Wiring only: the host's real inventory (sysfs, `nvidia-smi`),
 * the init system's reboot, HTTPS log upload, and the image checks.
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
import { HttpsUploader, InitRebooter, SysfsHostInventory } from "../runtimes/host/mod.ts";
import { NvidiaSmi } from "../runtimes/nvidia/mod.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import { agentCommands } from "./_agent_cli.ts";
import { IMAGE_COMMAND } from "./node_image_cli.ts";
import { JOURNAL_COMMAND } from "./node_journal_cli.ts";

/** The `node` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "node",
    defaultDataDir: "/var/lib/bcd",
    capabilities: ["devices.limits", "binding.kubernetes"],
    handlers(ctx) {
      const gpus = new NvidiaSmi({ binary: ctx.config.devices.nvidiaSmi });
      return new HandlerRegistry()
        .register(inventoryRefreshHandler({ host: new SysfsHostInventory(), gpus }))
        .register(logsCollectHandler({
          sources: [daemonLogSource(ctx.logRing), journalSummarySource(ctx.journal)],
          uploader: new HttpsUploader(),
        }))
        .register(nodeRebootHandler({ rebooter: new InitRebooter() }));
    },
  }),
  image: IMAGE_COMMAND,
  journal: JOURNAL_COMMAND,
};

if (import.meta.main) {
  Deno.exit(await runCli("node", Deno.args, COMMANDS));
}
