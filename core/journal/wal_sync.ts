/**
 * The journal's own fsync of SQLite's WAL, off the event loop.
 *
 * With `synchronous=FULL`, SQLite fsyncs the WAL inside `COMMIT`, and `node:sqlite` runs `COMMIT` on the event
 * loop's thread: every fsync stopped the whole daemon (signature checks, sessions, the next group of journal calls)
 * for its full duration. So the journal runs SQLite with `synchronous=NORMAL` (in WAL mode: no sync at commit; the WAL
 * is synced before each checkpoint and the database after it) and, after each group's `COMMIT`, fdatasyncs the WAL
 * itself through an async call, which Deno runs on its blocking pool; no operation of the group resolves before that
 * sync returned. The order on disk is the same as FULL's: every WAL frame of a commit is written before the sync that
 * makes it durable, and nothing is reported before it. Meanwhile the event loop runs, and calls that arrive join the
 * next group.
 *
 * Judgement calls, written down:
 * - One fdatasync after the commit, not SQLite's extra sync of a new WAL header when the WAL restarts: the header is
 *   written before the commit's frames, so the one sync after them makes both durable; a power cut before it leaves
 *   an unacknowledged commit that recovery discards (a new header's salt does not match older frames, an old
 *   header's does not match the new ones), never a change of what was already durable (a restart happens only after
 *   a checkpoint that SQLite synced into the database).
 * - The WAL is the file SQLite writes only while it is the file at its path: SQLite never replaces it while a
 *   connection is open, but each sync checks the inode at the path against the one held and syncs the file at the
 *   path if they differ, so a replaced WAL can never make a sync land on a file nobody reads.
 *
 * @module
 */

/** An open handle on `<journal>-wal`, synced after each commit. */
export class WalSync {
  readonly path: string;
  #file: Deno.FsFile;
  #ino: number | null;

  private constructor(path: string, file: Deno.FsFile, ino: number | null) {
    this.path = path;
    this.#file = file;
    this.#ino = ino;
  }

  /** Opens the WAL of the database at `dbPath` (it exists once the database is open in WAL mode and written). */
  static async open(dbPath: string): Promise<WalSync> {
    const path = `${dbPath}-wal`;
    const file = await Deno.open(path, { read: true });
    try {
      return new WalSync(path, file, (await file.stat()).ino);
    } catch (e) {
      file.close();
      throw e;
    }
  }

  /** The inode of the file the next sync flushes. */
  get inode(): number | null {
    return this.#ino;
  }

  /** Makes every byte written to the WAL so far durable (fdatasync), off the event loop's thread. */
  async sync(): Promise<void> {
    const now = Deno.statSync(this.path).ino;
    if (now !== this.#ino) {
      // Not expected while SQLite holds the database open; sync the file SQLite reads from now on.
      const file = await Deno.open(this.path, { read: true });
      this.#file.close();
      this.#file = file;
      this.#ino = (await file.stat()).ino;
    }
    await this.#file.syncData();
  }

  /** Closes the handle; idempotent. */
  close(): void {
    try {
      this.#file.close();
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource)) throw e;
    }
  }
}
