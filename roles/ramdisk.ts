/**
 * The `ramdisk` role's entry point: inside the provisioning initramfs. Wiring only: the daemon with the host's
 * inventory and log collection. `disk.wipe`, `deploy.image`, `boot.kexec` and the diagnostics register with their
 * flags and land with their issues; until then they are refused `UNSUPPORTED`.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { kindsForRole } from "../core/commands/kinds.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { agentCommands } from "./_agent_cli.ts";
import { runCli, type Subcommand } from "./_cli.ts";

/** The `ramdisk` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "ramdisk",
    defaultDataDir: "/run/bcd",
    handlers(ctx) {
      const mine = new Set(kindsForRole("ramdisk").map((k) => k.kind));
      const reg = new HandlerRegistry();
      for (const h of hostKindHandlers({ journal: ctx.journal, logRing: ctx.logRing })) {
        if (mine.has(h.kind)) reg.register(h); // node.reboot is not a ramdisk kind (boot.kexec is)
      }
      return reg;
    },
  }),
};

if (import.meta.main) {
  Deno.exit(await runCli("ramdisk", Deno.args, COMMANDS));
}
