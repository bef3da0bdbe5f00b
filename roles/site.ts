/**
 * The `site` role's entry point: one per site. Wiring only: the daemon with the host's inventory, log collection and
 * the init system's reboot. The site kinds (`bmc.*`, `boot.*`, `site.httpProxy`) and the `site` section's converger
 * register with their flags and land with their issues; until then they are refused `UNSUPPORTED`.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { agentCommands } from "./_agent_cli.ts";
import { runCli, type Subcommand } from "./_cli.ts";

/** The `site` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "site",
    defaultDataDir: "/var/lib/bcd-site",
    handlers(ctx) {
      const reg = new HandlerRegistry();
      for (const h of hostKindHandlers({ journal: ctx.journal, logRing: ctx.logRing })) reg.register(h);
      return reg;
    },
  }),
};

if (import.meta.main) {
  Deno.exit(await runCli("site", Deno.args, COMMANDS));
}
