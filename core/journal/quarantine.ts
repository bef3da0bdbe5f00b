/**
 * Damage handling: a journal that fails its integrity check is moved aside into `quarantine/` (kept for
 * forensics, with its `-wal` and `-shm` companions), never silently recreated in place.
 *
 * @module
 */
import { join } from "../util/path.ts";
import { fsyncDir } from "./durable_file.ts";

/** The quarantine folder inside the data directory. */
export const QUARANTINE_DIR = "quarantine";

/** Where a damaged journal went. */
export interface Quarantined {
  /** The moved database file. */
  readonly path: string;
  /** Why it was moved (the integrity failure). */
  readonly reason: string;
}

/** Moves `dbPath` and its `-wal`/`-shm` files into `dataDir/quarantine/`, durably; returns the new db path. */
export async function quarantineJournal(
  dataDir: string,
  dbPath: string,
  reason: string,
  now: number,
): Promise<Quarantined> {
  const qdir = join(dataDir, QUARANTINE_DIR);
  await Deno.mkdir(qdir, { recursive: true, mode: 0o700 });
  const stamp = new Date(now).toISOString().replaceAll(":", "").replaceAll(".", "");
  const base = join(qdir, `journal-${stamp}-${crypto.randomUUID().slice(0, 8)}.db`);
  for (const suffix of ["-wal", "-shm", ""]) {
    try {
      await Deno.rename(dbPath + suffix, base + suffix);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  await Deno.writeTextFile(`${base}.reason.txt`, reason + "\n", { mode: 0o600 });
  await fsyncDir(qdir);
  await fsyncDir(dataDir);
  return { path: base, reason };
}
