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
