/**
 * The journal's on-disk shape (`journal.db`, SQLite) and the durability pragmas it refuses to run without.
 *
 * @module
 */
import { JournalDamaged, JournalDurabilityError } from "./errors.ts";
import { colNum, colStr, type SqlDriver } from "./sql_driver.ts";

/** The schema version written into `meta`; a journal with another version is treated as damaged. */
export const SCHEMA_VERSION = 1;

/**
 * Allocation ids whose last journaled allocation event is `AllocationBound` (written in the transaction that appends
 * the event). Added after schema version 1 shipped: a journal without it gets it at open, empty.
 */
const ANNOUNCED_DDL = `CREATE TABLE IF NOT EXISTS announced_allocations (
  allocation_id TEXT PRIMARY KEY,
  event_seq INTEGER NOT NULL
) STRICT;
`;

const DDL = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS commands (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN ('accepted', 'running', 'done')),
  kind TEXT NOT NULL,
  retry_safe INTEGER NOT NULL,
  self_terminating INTEGER NOT NULL,
  incarnation TEXT NOT NULL,
  boot_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  outcome TEXT,
  code TEXT,
  message TEXT,
  body BLOB,
  rebooted INTEGER NOT NULL DEFAULT 0,
  previous_boot_id TEXT,
  result_acked INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX IF NOT EXISTS commands_by_state ON commands (state, updated_at);
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY,
  class TEXT NOT NULL CHECK (class IN ('metric', 'transition', 'result')),
  payload BLOB NOT NULL,
  size INTEGER NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS events_by_class ON events (class, seq);
CREATE TABLE IF NOT EXISTS event_totals (
  class TEXT PRIMARY KEY,
  count INTEGER NOT NULL,
  bytes INTEGER NOT NULL
) STRICT;
INSERT OR IGNORE INTO event_totals VALUES ('metric', 0, 0), ('transition', 0, 0), ('result', 0, 0);
CREATE TABLE IF NOT EXISTS spec (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  hash TEXT NOT NULL,
  signature BLOB,
  stored_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS exec_tickets (jti TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) STRICT;
CREATE INDEX IF NOT EXISTS exec_tickets_by_expiry ON exec_tickets (expires_at);
${ANNOUNCED_DDL}`;

/**
 * Sets WAL + `synchronous=NORMAL` and reads both back; throws {@link JournalDurabilityError} when SQLite reports
 * anything weaker (another journal mode, `synchronous` OFF). NORMAL, not FULL: the journal fsyncs the WAL itself
 * after every commit, off the event loop (`wal_sync.ts`); NORMAL keeps SQLite's syncs around checkpoints.
 */
export async function enforceDurability(db: SqlDriver): Promise<void> {
  await db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  const mode = (await db.all("PRAGMA journal_mode"))[0]?.["journal_mode"];
  if (typeof mode !== "string" || mode.toLowerCase() !== "wal") {
    throw new JournalDurabilityError(`journal_mode is ${JSON.stringify(mode)} after setting WAL; refusing to open`);
  }
  const syncRow = (await db.all("PRAGMA synchronous"))[0];
  const sync = syncRow === undefined ? NaN : Number(syncRow["synchronous"]);
  if (!(sync >= 1)) {
    throw new JournalDurabilityError(
      `synchronous is ${sync} after setting NORMAL (1); refusing to open a journal whose checkpoints are not synced`,
    );
  }
}

/** Runs SQLite's `quick_check`; throws {@link JournalDamaged} unless it answers `ok`. */
export async function checkIntegrity(db: SqlDriver): Promise<void> {
  const rows = await db.all("PRAGMA quick_check");
  const first = rows[0] === undefined ? undefined : Object.values(rows[0])[0];
  if (rows.length !== 1 || first !== "ok") {
    const lines = rows.slice(0, 5).map((r) => String(Object.values(r)[0])).join("; ");
    throw new JournalDamaged(`quick_check failed: ${lines}`);
  }
}

/** Meta keys and their initial values for a new journal. */
export interface InitialMeta {
  readonly journalId: string;
  readonly nodeId: string | null;
  readonly serverTimeMark: number;
  readonly createdAt: number;
}

/**
 * Creates the tables of a new journal, or checks that an existing one carries this schema version and a
 * `journal_id` (else {@link JournalDamaged}). Runs inside the caller's transaction.
 */
export async function ensureSchema(db: SqlDriver, fresh: boolean, init: InitialMeta): Promise<void> {
  if (fresh) {
    await db.exec(DDL);
    const put = (k: string, v: unknown) =>
      db.run("INSERT INTO meta (key, value) VALUES (?, ?)", [k, JSON.stringify(v)]);
    await put("schema_version", SCHEMA_VERSION);
    await put("journal_id", init.journalId);
    await put("node_id", init.nodeId);
    await put("event_seq", 0);
    await put("last_epoch", 0);
    await put("applied_generation", 0);
    await put("server_time_mark", init.serverTimeMark);
    await put("created_at", init.createdAt);
    return;
  }
  const tables = new Set(
    (await db.all("SELECT name FROM sqlite_master WHERE type = 'table'")).map((r) => colStr(r, "name")),
  );
  for (const t of ["meta", "commands", "events", "event_totals", "spec", "exec_tickets"]) {
    if (!tables.has(t)) throw new JournalDamaged(`table ${t} is missing`);
  }
  const rows = await db.all("SELECT value FROM meta WHERE key = 'schema_version'");
  const v = rows[0] === undefined ? undefined : JSON.parse(colStr(rows[0], "value"));
  if (v !== SCHEMA_VERSION) throw new JournalDamaged(`schema_version is ${JSON.stringify(v)}, want ${SCHEMA_VERSION}`);
  const jid = await db.all("SELECT value FROM meta WHERE key = 'journal_id'");
  if (jid[0] === undefined || typeof JSON.parse(colStr(jid[0], "value")) !== "string") {
    throw new JournalDamaged("meta holds no journal_id");
  }
  if (!tables.has("announced_allocations")) await db.exec(ANNOUNCED_DDL);
  const totals = await db.all("SELECT count(*) AS n FROM event_totals");
  if (totals[0] === undefined || colNum(totals[0], "n") !== 3) throw new JournalDamaged("event_totals is incomplete");
}
