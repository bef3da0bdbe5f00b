/**
 * The `guest` role's entry point: wiring only.
 *
 * @module
 */
import { runCli, type Subcommand } from "./_cli.ts";
import { GUEST_CONTROL_COMMANDS } from "./guest_serve_cli.ts";

/** The `guest` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...GUEST_CONTROL_COMMANDS,
};

if (import.meta.main) {
  Deno.exit(await runCli("guest", Deno.args, COMMANDS));
}
