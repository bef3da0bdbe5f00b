import assert from "node:assert/strict";
import { join } from "node:path";
import { memoryLogger } from "../log/mod.ts";
import { bytes, openTest, tempDataDir, testClock } from "./journal_testing.ts";
import { JOURNAL_FILE } from "./journal.ts";
import { QUARANTINE_DIR } from "./quarantine.ts";

function quarantined(dir: string): string[] {
  try {
    return [...Deno.readDirSync(join(dir, QUARANTINE_DIR))].map((e) => e.name).sort();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
}

Deno.test("a journal that is not a database is moved aside and a new journal_id starts, logged loudly", async () => {
  await using tmp = await tempDataDir();
  const garbage = bytes("this is not sqlite ".repeat(300));
  await Deno.writeFile(join(tmp.dir, JOURNAL_FILE), garbage);
  const { logger, lines } = memoryLogger();
  const j = await openTest(tmp.dir, testClock(), { logger });
  assert.ok(j.opened.quarantined, "reported as quarantined");
  assert.equal(j.opened.created, true);
  const names = quarantined(tmp.dir);
  const db = names.find((n) => n.endsWith(".db"));
  assert.ok(db, `quarantine holds the old file: ${names}`);
  assert.deepEqual(await Deno.readFile(join(tmp.dir, QUARANTINE_DIR, db)), garbage, "kept byte for byte");
  const err = lines.find((l) => l.level === "error");
  assert.ok(err, "an error-level line");
  assert.equal(err.journal_id, j.journalId);
  await j.accept("c", { kind: "k", retrySafe: true, selfTerminating: false });
  await j.close();
});

Deno.test("a journal with a damaged page fails its integrity check and is quarantined, never reused in place", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock);
  for (let i = 0; i < 300; i++) await j.accept(`cmd-${i}`, { kind: "k", retrySafe: true, selfTerminating: false });
  const oldId = j.journalId;
  await j.close();
  // Checkpointed on close: the rows live in journal.db. Smash bytes in the middle of a b-tree page.
  const path = join(tmp.dir, JOURNAL_FILE);
  const buf = await Deno.readFile(path);
  assert.ok(buf.length > 8192, `db is ${buf.length} bytes`);
  for (let i = 4096 + 8; i < 4096 + 400; i++) buf[i] = 0xff;
  await Deno.writeFile(path, buf);
  const j2 = await openTest(tmp.dir, clock);
  assert.ok(j2.opened.quarantined, "quarantined");
  assert.notEqual(j2.journalId, oldId, "a new journal_id");
  assert.equal(await j2.get("cmd-1"), null, "the new journal starts empty");
  assert.ok((quarantined(tmp.dir)).some((n) => n.endsWith(".reason.txt")));
  await j2.close();
});

Deno.test("a journal without its meta is damaged, not silently reinitialised", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock());
  await j.close();
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(join(tmp.dir, JOURNAL_FILE));
  db.exec("DELETE FROM meta WHERE key = 'journal_id'");
  db.close();
  const j2 = await openTest(tmp.dir, testClock());
  assert.match(j2.opened.quarantined?.reason ?? "", /journal_id/);
  await j2.close();
});
