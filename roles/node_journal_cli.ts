/**
 * `bcd-node journal inspect --data-dir DIR [--config PATH]`: the journal's operator view as one JSON object on
 * stdout (meta, counts by state, unacked events by class, bounds in use). Exit 0 with the JSON; 3 with
 * `{"ok":false,"reason":"no-journal"}` when the directory holds no journal; 1 on an internal error; 2 on usage.
 *
 * `bcd-node journal reset-time-mark --data-dir DIR [--to MS]`: sets a wrong server time mark (journal and
 * identity.json) to this host's clock, or to `--to` (ms since the epoch), with the daemon stopped (it takes the
 * journal's lock; exit 3 `journal-locked` while a daemon holds it). Prints `{"ok":true,"old_mark":…,"mark":…}`.
 *
 * @module
 */
import { loadAgentConfig } from "../core/config/mod.ts";
import { boundsFromConfig, Journal, JOURNAL_FILE, JournalError } from "../core/journal/mod.ts";
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
          const { inspectJournal } = await import("../core/journal/inspect.ts");
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
    "reset-time-mark": {
      summary: "set a wrong server time mark of --data-dir DIR to this host's clock (or --to MS); daemon stopped",
      options: { "data-dir": { type: "string" }, to: { type: "string" } },
      run: async ({ values }) => {
        const dir = values["data-dir"];
        if (typeof dir !== "string" || dir === "") {
          throw new UsageError("journal reset-time-mark: --data-dir DIR is needed");
        }
        const to = typeof values.to === "string" ? Number(values.to) : Date.now();
        if (!Number.isSafeInteger(to) || to < 0) {
          throw new UsageError(`journal reset-time-mark: --to ${values.to} is not milliseconds since the epoch`);
        }
        try {
          await Deno.stat(`${dir}/${JOURNAL_FILE}`);
        } catch (e) {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
          printOut(JSON.stringify({ ok: false, reason: "no-journal", message: `${dir} holds no journal` }));
          return EXIT_REFUSED;
        }
        let j: Journal;
        try {
          j = await Journal.open({ dataDir: dir, bootId: "reset-time-mark" });
        } catch (e) {
          if (e instanceof JournalError && e.reason === "journal-locked") {
            printOut(JSON.stringify({ ok: false, reason: e.reason, message: e.message }));
            return EXIT_REFUSED;
          }
          throw e;
        }
        try {
          const old = await j.resetTimeMark(to);
          printOut(JSON.stringify({ ok: true, old_mark: old, mark: to }));
          return EXIT_OK;
        } finally {
          await j.close();
        }
      },
    },
  },
};
