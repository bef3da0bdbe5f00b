import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDataDir } from "./journal_testing.ts";
import { WalSync } from "./wal_sync.ts";

Deno.test("WalSync syncs the file at the WAL's path, following a WAL replaced there", async () => {
  await using tmp = await tempDataDir();
  const db = join(tmp.dir, "journal.db");
  await Deno.writeTextFile(`${db}-wal`, "first");
  const wal = await WalSync.open(db);
  try {
    const first = (await Deno.stat(`${db}-wal`)).ino;
    assert.equal(wal.inode, first);
    await wal.sync();
    assert.equal(wal.inode, first, "unchanged path: the same file");
    await Deno.writeTextFile(`${db}-wal.new`, "second");
    await Deno.rename(`${db}-wal.new`, `${db}-wal`);
    const second = (await Deno.stat(`${db}-wal`)).ino;
    assert.notEqual(second, first);
    await wal.sync();
    assert.equal(wal.inode, second, "a replaced WAL: the sync went to the file now at the path");
  } finally {
    wal.close();
  }
});

Deno.test("WalSync refuses to open when the database has no WAL", async () => {
  await using tmp = await tempDataDir();
  await assert.rejects(WalSync.open(join(tmp.dir, "journal.db")), Deno.errors.NotFound);
});

/** The open file descriptions of this process on `path` (one per descriptor here: none is duplicated). */
async function descriptorsOn(path: string): Promise<number> {
  let n = 0;
  for await (const e of Deno.readDir("/proc/self/fd")) {
    try {
      if (await Deno.readLink(`/proc/self/fd/${e.name}`) === path) n++;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err; // the descriptor readDir itself used, closed since
    }
  }
  return n;
}

Deno.test("WalSync opens one file description per sync that may be in flight and runs each sync on a free one", async () => {
  await using tmp = await tempDataDir();
  const db = join(tmp.dir, "journal.db");
  await Deno.writeTextFile(`${db}-wal`, "frames");
  const wal = await WalSync.open(db, 2);
  try {
    assert.equal(await descriptorsOn(await Deno.realPath(`${db}-wal`)), 2, "two descriptions, opened with the journal");
    const running = [wal.sync(), wal.sync()];
    await assert.rejects(wal.sync(), RangeError, "a third sync at once has no description of its own");
    await Promise.all(running);
    await wal.sync();
    await Promise.all([wal.sync(), wal.sync()]);
  } finally {
    wal.close();
  }
  assert.equal(await descriptorsOn(await Deno.realPath(`${db}-wal`)), 0, "close closes them all");
});

Deno.test("WalSync counts the syncs that found the WAL grown since the previous sync, not those after writes in place", async () => {
  await using tmp = await tempDataDir();
  const db = join(tmp.dir, "journal.db");
  await Deno.writeFile(`${db}-wal`, new Uint8Array(100));
  const wal = await WalSync.open(db);
  const writer = await Deno.open(`${db}-wal`, { write: true });
  try {
    await wal.sync();
    assert.deepEqual(wal.stats, { syncs: 1, grown: 0, grownBytes: 0 }, "the first sync has nothing to compare with");
    await writer.seek(0, Deno.SeekMode.End);
    await writer.write(new Uint8Array(40));
    await wal.sync();
    assert.deepEqual(wal.stats, { syncs: 2, grown: 1, grownBytes: 40 }, "appended: grown by 40 bytes");
    await writer.seek(10, Deno.SeekMode.Start);
    await writer.write(new Uint8Array(60).fill(1));
    await wal.sync();
    assert.deepEqual(wal.stats, { syncs: 3, grown: 1, grownBytes: 40 }, "overwritten in place: not grown");
  } finally {
    writer.close();
    wal.close();
  }
});
