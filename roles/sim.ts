/**
 * The `sim` role's entry point: wiring only.
 *
 * @module
 */
import { runCli, type Subcommand } from "./_cli.ts";

/** The `sim` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {};

if (import.meta.main) {
  Deno.exit(await runCli("sim", Deno.args, COMMANDS));
}
