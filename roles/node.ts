/**
 * The `node` role's entry point: wiring only.
 *
 * @module
 */
import { runCli, type Subcommand } from "./_cli.ts";
import { IMAGE_COMMAND } from "./node_image_cli.ts";
import { JOURNAL_COMMAND } from "./node_journal_cli.ts";

/** The `node` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  image: IMAGE_COMMAND,
  journal: JOURNAL_COMMAND,
};

if (import.meta.main) {
  Deno.exit(await runCli("node", Deno.args, COMMANDS));
}
