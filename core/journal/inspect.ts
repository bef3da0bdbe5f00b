/**
 * The operator view behind `bcd-node journal inspect --data-dir DIR`: meta, counts by state, unacked events by
 * class and the bounds in use, read through a read-only connection. It never takes the writer lock and never
 * writes, so it works beside a running daemon (it says who holds the lock).
 *
 * @module
 */
import { join } from "../util/path.ts";
import { DEFAULT_BOUNDS, type JournalBounds } from "./bounds.ts";
import { openNodeSqlite } from "./driver_node_sqlite.ts";
import { JournalError } from "./errors.ts";
import { eventTotals, isFull } from "./events.ts";
import { JOURNAL_FILE } from "./open.ts";
import { lockHolder } from "./lock.ts";
import { getMeta } from "./meta.ts";
import { QUARANTINE_DIR } from "./quarantine.ts";
import { colBytesOrNull, colNum, colStr, type SqlDriverFactory } from "./sql_driver.ts";

/** Options for {@link inspectJournal}. */
export interface InspectOptions {
  /** The bounds the daemon runs with (from config.toml); the defaults otherwise. */
  readonly bounds?: JournalBounds;
  readonly driver?: SqlDriverFactory;
}

/** Reads the journal of `dataDir` without writing; throws JournalError `no-journal` when there is none. */
export async function inspectJournal(dataDir: string, opts: InspectOptions = {}): Promise<Record<string, unknown>> {
  const path = join(dataDir, JOURNAL_FILE);
  try {
    if ((await Deno.stat(path)).size === 0) throw new Deno.errors.NotFound(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new JournalError("no-journal", `no journal at ${path}`);
    throw e;
  }
  const bounds = opts.bounds ?? DEFAULT_BOUNDS;
  const db = await (opts.driver ?? openNodeSqlite)(path, { readOnly: true });
  try {
    const meta = await getMeta(db);
    const states: Record<string, number> = { accepted: 0, running: 0, done: 0 };
    for (const r of await db.all("SELECT state, count(*) AS n FROM commands GROUP BY state")) {
      states[colStr(r, "state")] = colNum(r, "n");
    }
    const unackedResults = colNum(
      (await db.all("SELECT count(*) AS n FROM commands WHERE state = 'done' AND result_acked = 0"))[0]!,
      "n",
    );
    const totals = await eventTotals(db);
    const spec = (await db.all("SELECT generation, hash, length(bytes) AS size, signature FROM spec WHERE id = 1"))[0];
    const tickets = colNum((await db.all("SELECT count(*) AS n FROM exec_tickets"))[0]!, "n");
    const holder = lockHolder(dataDir);
    return {
      data_dir: dataDir,
      lock: { held: holder !== null, ...(holder !== null ? { holder } : {}) },
      meta: {
        node_id: meta.nodeId,
        journal_id: meta.journalId,
        event_seq: meta.eventSeq,
        last_epoch: meta.lastEpoch,
        applied_generation: meta.appliedGeneration,
        server_time_mark: meta.serverTimeMark === 0 ? null : _isoOrMs(meta.serverTimeMark),
        created_at: new Date(meta.createdAt).toISOString(),
      },
      commands: { ...states, unacked_results: unackedResults },
      events: {
        metric: totals.metric,
        transition: totals.transition,
        result: totals.result,
      },
      bounds: {
        max_bytes: bounds.maxBytes,
        max_unacked_events: bounds.maxUnackedEvents,
        used_bytes: totals.metric.bytes + totals.transition.bytes + totals.result.bytes,
        used_events: totals.metric.count + totals.transition.count + totals.result.count,
        full: isFull(totals, bounds),
      },
      spec: spec === undefined ? null : {
        generation: colNum(spec, "generation"),
        hash: colStr(spec, "hash"),
        bytes: colNum(spec, "size"),
        signed: colBytesOrNull(spec, "signature") !== null,
      },
      exec_tickets: tickets,
      files: await _sizes(dataDir),
    };
  } finally {
    await db.close();
  }
}

async function _sizes(dataDir: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const s of ["", "-wal"]) {
    try {
      out[JOURNAL_FILE + s] = (await Deno.stat(join(dataDir, JOURNAL_FILE + s))).size;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  try {
    out[QUARANTINE_DIR] = [...Deno.readDirSync(join(dataDir, QUARANTINE_DIR))].filter((e) => e.name.endsWith(".db"))
      .map((e) => e.name).sort();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out;
}

/** A mark an older build let past year 9999 (9e15 ms) has no ISO form: it is shown as its milliseconds. */
function _isoOrMs(ms: number): string | number {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? ms : d.toISOString();
}

/** What `doctor` reads of a journal beside {@link inspectJournal}: SQLite's `quick_check` and the raw time mark. */
export interface JournalHealth {
  /** `ok`, or quick_check's first problem. */
  readonly integrity: string;
  /** The server time mark, ms (0: none seen). */
  readonly serverTimeMark: number;
}

/** Runs `PRAGMA quick_check` over a read-only connection (no lock taken, nothing written); `no-journal` when none. */
export async function journalHealth(
  dataDir: string,
  opts: Pick<InspectOptions, "driver"> = {},
): Promise<JournalHealth> {
  const path = join(dataDir, JOURNAL_FILE);
  try {
    if ((await Deno.stat(path)).size === 0) throw new Deno.errors.NotFound(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new JournalError("no-journal", `no journal at ${path}`);
    throw e;
  }
  const db = await (opts.driver ?? openNodeSqlite)(path, { readOnly: true });
  try {
    const rows = await db.all("PRAGMA quick_check(8)");
    const problems = rows.map((r) => String(Object.values(r)[0])).filter((s) => s !== "ok");
    return {
      integrity: problems.length === 0 ? "ok" : problems.join("; ").slice(0, 500),
      serverTimeMark: (await getMeta(db)).serverTimeMark,
    };
  } finally {
    await db.close();
  }
}
