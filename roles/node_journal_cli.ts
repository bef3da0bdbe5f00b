/**
 * `bcd-node journal inspect --data-dir DIR [--config PATH]`: the journal's operator view as one JSON object on
 * stdout (meta, counts by state, unacked events by class, bounds in use). Exit 0 with the JSON; 3 with
 * `{"ok":false,"reason":"no-journal"}` when the directory holds no journal; 1 on an internal error; 2 on usage.
 *
 * @module
 */
import { loadAgentConfig } from "../core/config/mod.ts";
import { boundsFromConfig, inspectJournal, JournalError } from "../core/journal/mod.ts";
import { EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, printOut, type Subcommand, UsageError } from "./_cli.ts";

/** The `journal` command group of the node role. */
export const JOURNAL_COMMAND: Subcommand = {
  summary: "look at the command journal (seed 000 §The journal)",
  sub: {
    inspect: {
      summary: "print the journal of --data-dir DIR as JSON (read-only; works beside a running daemon)",
      options: { "data-dir": { type: "string" }, config: { type: "string" } },
      run: async ({ values }) => {
        const dir = values["data-dir"];
        if (typeof dir !== "string" || dir === "") throw new UsageError("journal inspect: --data-dir DIR is needed");
        const cfgPath = values.config;
        try {
          const bounds = typeof cfgPath === "string"
            ? boundsFromConfig(loadAgentConfig(await Deno.readTextFile(cfgPath)).journal)
            : undefined;
          printOut(JSON.stringify({ ok: true, ...(await inspectJournal(dir, bounds ? { bounds } : {})) }));
          return EXIT_OK;
        } catch (e) {
          if (e instanceof JournalError && e.reason === "no-journal") {
            printOut(JSON.stringify({ ok: false, reason: e.reason, message: e.message }));
            return EXIT_REFUSED;
          }
          printOut(
            JSON.stringify({ ok: false, error: "internal", message: e instanceof Error ? e.message : String(e) }),
          );
          return EXIT_INTERNAL;
        }
      },
    },
  },
};
