/**
 * The `ramdisk` role's entry point: wiring only.
 *
 * @module
 */
import { runCli, type Subcommand } from "./_cli.ts";

/** The `ramdisk` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {};

if (import.meta.main) {
  Deno.exit(await runCli("ramdisk", Deno.args, COMMANDS));
}
