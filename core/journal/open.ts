/**
 * Bringing a journal up: the one-writer lock, the durability pragmas, the integrity check, quarantine of a damaged
 * journal, the schema of a new one and the server time mark restored from the identity.json mirror.
 *
 * @module
 */
import { join } from "../util/path.ts";
import type { Clock } from "../clock.ts";
import type { Logger } from "../log/mod.ts";
import { fsyncDir } from "./durable_file.ts";
import { JournalDamaged, JournalError } from "./errors.ts";
import { readIdentity } from "./identity_file.ts";
import { acquireLock, type DataDirLock } from "./lock.ts";
import { getMeta, setMeta } from "./meta.ts";
import { type Quarantined, quarantineJournal } from "./quarantine.ts";
import { checkIntegrity, enforceDurability, ensureSchema } from "./schema.ts";
import { WalSync } from "./wal_sync.ts";
import { MAX_SYNCS_IN_FLIGHT } from "./write_queue.ts";
import type { SqlDriver, SqlDriverFactory } from "./sql_driver.ts";

/** The database file's name inside the data directory. */
export const JOURNAL_FILE = "journal.db";

/**
 * The logger calls the journal makes (a pino `Logger` fits). Typed as a subset so the journal does not load pino
 * itself: `journal inspect` and other light users need no logger and no pino permissions.
 */
export type JournalLogger = Pick<Logger, "error" | "warn" | "fatal">;

/** The logger used when none is given. */
export const _NO_LOG: JournalLogger = { error: () => {}, warn: () => {}, fatal: () => {} };

/** How the journal came up. */
export interface OpenReport {
  /** A new journal (new `journal_id`) was created. */
  readonly created: boolean;
  /** Set when a damaged journal was moved aside before the new one was created. */
  readonly quarantined?: Quarantined;
}

/** What {@link openStore} needs. */
export interface StoreOptions {
  readonly dataDir: string;
  readonly incarnation: string;
  readonly clock: Pick<Clock, "now">;
  readonly log: JournalLogger;
  readonly driver: SqlDriverFactory;
  readonly nodeId: string | null;
}

/** An open, checked store and the lock that guards it. */
export interface OpenStore {
  readonly db: SqlDriver;
  readonly lock: DataDirLock;
  readonly journalId: string;
  readonly opened: OpenReport;
  /** The WAL, synced by the journal after each commit (SQLite runs with synchronous=NORMAL). */
  readonly wal: WalSync;
}

/** SQLite's words for a file that is not (or no longer) a database. */
const DAMAGE = /not a database|malformed|corrupt|file is encrypted/i;

/**
 * Opens the store of `opts.dataDir`. A journal that fails its integrity check is moved into `quarantine/` and a
 * new one (new `journal_id`) is created, logged at error level; anything else that fails is thrown, with the lock
 * released.
 */
export async function openStore(opts: StoreOptions): Promise<OpenStore> {
  const { dataDir, clock, log } = opts;
  await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lock = acquireLock(dataDir, {
    pid: Deno.pid,
    incarnation: opts.incarnation,
    since: new Date(clock.now()).toISOString(),
  });
  try {
    const mirror = (await readIdentity(dataDir))?.server_time_mark;
    const dbPath = join(dataDir, JOURNAL_FILE);
    let quarantined: Quarantined | undefined;
    for (;;) {
      const fresh = await _isFresh(dbPath);
      const db = await opts.driver(dbPath);
      try {
        await enforceDurability(db);
        if (!fresh) await checkIntegrity(db);
        await db.exec("BEGIN IMMEDIATE");
        await ensureSchema(db, fresh, {
          journalId: crypto.randomUUID(),
          nodeId: opts.nodeId,
          serverTimeMark: typeof mirror === "number" ? mirror : 0,
          createdAt: clock.now(),
        });
        let meta = await getMeta(db);
        if (typeof mirror === "number" && Number.isSafeInteger(mirror) && mirror > meta.serverTimeMark) {
          await setMeta(db, "server_time_mark", mirror);
          meta = await getMeta(db);
        }
        await db.exec("COMMIT");
        const wal = await WalSync.open(dbPath, MAX_SYNCS_IN_FLIGHT);
        try {
          await wal.sync(); // what this open wrote (a new schema, the time mark) is durable before it returns
          if (fresh) await fsyncDir(dataDir);
        } catch (e) {
          wal.close();
          throw e;
        }
        if (quarantined) {
          log.error(
            { journal_id: meta.journalId, quarantined: quarantined.path, reason: quarantined.reason },
            "journal failed its integrity check: moved aside, started a new journal",
          );
        } else if (fresh) log.warn({ journal_id: meta.journalId }, "started a new journal");
        const opened: OpenReport = { created: fresh, ...(quarantined ? { quarantined } : {}) };
        return { db, lock, journalId: meta.journalId, opened, wal };
      } catch (e) {
        // The failure above is what the caller needs; a close that fails too is logged beside it, not lost.
        await db.close().catch((c) => log.warn({ err: c }, "closing the journal after a failed open failed too"));
        const damaged = e instanceof JournalDamaged ||
          (!(e instanceof JournalError) && e instanceof Error && DAMAGE.test(e.message));
        if (!damaged || quarantined !== undefined) throw e;
        quarantined = await quarantineJournal(dataDir, dbPath, (e as Error).message, clock.now());
      }
    }
  } catch (e) {
    lock.release();
    throw e;
  }
}

async function _isFresh(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).size === 0;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return true;
    throw e;
  }
}
