/**
 * The `guest` role's entry point: wiring only.
 *
 * @module
 */
import { runCli, type Subcommand } from "./_cli.ts";
import { BUNDLE_COMMAND } from "./guest_bundle_cli.ts";
import { GUEST_CONTROL_COMMANDS } from "./guest_serve_cli.ts";
import { turnsCmd } from "./guest_turns_cli.ts";

/** The `guest` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  bundle: BUNDLE_COMMAND,
  ...GUEST_CONTROL_COMMANDS,
  turns: turnsCmd,
};

if (import.meta.main) {
  Deno.exit(await runCli("guest", Deno.args, COMMANDS));
}
