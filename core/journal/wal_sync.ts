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
 * - Syncs overlap (`write_queue.ts`), each on a file description of its own, all opened with the journal: Linux
 *   reports a writeback error once per open file description, to the first fsync on it that checks, so two syncs in
 *   flight on one description could see one report the error and the other succeed over frames the kernel dropped.
 *   With one description per sync in flight, every sync reports every writeback error recorded since its
 *   description's previous check, and a success means none was recorded before it, whichever sync wrote the pages.
 *   Opened with the journal, not on demand: a description opened after another file's fsync (SQLite's own, at a
 *   checkpoint, whose error an automatic checkpoint ignores) saw an error would never report it.
 *
 * What a sync costs depends on whether the WAL grew since the previous one (measured on this ext4 disk, issue 24): a
 * write that extends the file makes fdatasync commit the file system's journal too (the new size, the blocks
 * allocated), and costs the event loop the kernel's block reservation in SQLite's write calls, while a WAL restarted
 * after a checkpoint is overwritten in place. SQLite keeps the WAL at its largest size (no `journal_size_limit`), so a
 * running journal grows it only until its first checkpoint; {@link WalSync.stats} counts the syncs that found it grown.
 *
 * @module
 */

/** One open file description of the WAL, used by at most one sync at a time. */
interface _Handle {
  file: Deno.FsFile;
  ino: number | null;
}

/** What the syncs found at the WAL's path (read from the stat each sync makes anyway). */
export interface WalSyncStats {
  /** Syncs started. */
  syncs: number;
  /** Syncs that found the WAL larger than the previous sync did (the file grew: appended frames). */
  grown: number;
  /** The bytes the WAL grew by over those syncs. */
  grownBytes: number;
}

/** Open handles on `<journal>-wal`, one per sync that may be in flight, synced after each commit. */
export class WalSync {
  readonly path: string;
  /** Syncs, and those that found the WAL grown since the previous sync. */
  readonly stats: WalSyncStats = { syncs: 0, grown: 0, grownBytes: 0 };
  /** The WAL's size at the previous sync (at open: none yet). */
  #size = -1;
  /** Handles no sync is using. */
  #free: _Handle[];
  readonly #all: _Handle[];

  private constructor(path: string, handles: _Handle[]) {
    this.path = path;
    this.#all = handles;
    this.#free = [...handles];
  }

  /**
   * Opens the WAL of the database at `dbPath` (it exists once the database is open in WAL mode and written), once per
   * sync that may run at the same time (`handles`, the write queue's cap).
   */
  static async open(dbPath: string, handles = 1): Promise<WalSync> {
    if (!Number.isSafeInteger(handles) || handles < 1) {
      throw new RangeError(`handles is ${handles}; a WAL sync needs at least one`);
    }
    const path = `${dbPath}-wal`;
    const opened: _Handle[] = [];
    try {
      for (let i = 0; i < handles; i++) {
        const h: _Handle = { file: await Deno.open(path, { read: true }), ino: null };
        opened.push(h);
        h.ino = (await h.file.stat()).ino;
      }
      return new WalSync(path, opened);
    } catch (e) {
      for (const h of opened) h.file.close();
      throw e;
    }
  }

  /** The inode of the file the next sync flushes. */
  get inode(): number | null {
    return this.#all[0]!.ino;
  }

  /**
   * Makes every byte written to the WAL before the call durable (fdatasync), off the event loop's thread, on a handle
   * no other sync in flight uses. Throws when more syncs are in flight than {@link open} opened handles for.
   */
  async sync(): Promise<void> {
    const h = this.#free.pop();
    if (h === undefined) {
      throw new RangeError(`${this.#all.length} WAL syncs are in flight already, one per handle; no handle is free`);
    }
    try {
      const st = Deno.statSync(this.path);
      this.#count(st.size);
      const now = st.ino;
      if (now !== h.ino) {
        // Not expected while SQLite holds the database open; sync the file SQLite reads from now on.
        const file = await Deno.open(this.path, { read: true });
        h.file.close();
        h.file = file;
        h.ino = (await file.stat()).ino;
      }
      await h.file.syncData();
    } finally {
      this.#free.push(h);
    }
  }

  #count(size: number): void {
    this.stats.syncs++;
    if (this.#size >= 0 && size > this.#size) {
      this.stats.grown++;
      this.stats.grownBytes += size - this.#size;
    }
    this.#size = size;
  }

  /** Closes the handles; idempotent. */
  close(): void {
    for (const h of this.#all) {
      try {
        h.file.close();
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
    }
  }
}
