/**
 * The built-in sources of `logs.collect`: the daemon's recent logs (a {@link LogRing}) and a journal summary (meta,
 * command counts by state, event totals) as JSON.
 *
 * @module
 */
import type { Journal } from "../../journal/mod.ts";
import type { LogRing } from "./log_ring.ts";
import type { LogSource } from "./logs_collect.ts";

/** `daemon`: the recent log lines, `daemon.log` in the archive. */
export function daemonLogSource(ring: LogRing): LogSource {
  return {
    name: "daemon",
    file: "daemon.log",
    collect(sinceMs, maxBytes) {
      const r = ring.since(sinceMs, maxBytes);
      return Promise.resolve({ data: new TextEncoder().encode(r.text), truncated: r.truncated });
    },
  };
}

/** `journal`: a summary of the journal, `journal-summary.json` in the archive (never command payloads or results). */
export function journalSummarySource(journal: Pick<Journal, "meta" | "commandCounts" | "eventTotals">): LogSource {
  return {
    name: "journal",
    file: "journal-summary.json",
    async collect(_sinceMs, maxBytes) {
      const summary = {
        meta: await journal.meta(),
        commands: await journal.commandCounts(),
        events: await journal.eventTotals(),
      };
      const data = new TextEncoder().encode(JSON.stringify(summary, null, 2) + "\n");
      if (data.length > maxBytes) return { data: new Uint8Array(), truncated: true };
      return { data, truncated: false };
    },
  };
}
