/**
 * One contract suite for every storage binding behind {@link SqlDriver}: `node:sqlite` (production) and
 * `@libsql/client` (benchmark comparison). The libsql binding loads a native addon; this suite runs with `-A`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { openLibsql } from "./driver_libsql.ts";
import { openNodeSqlite } from "./driver_node_sqlite.ts";
import { enforceDurability } from "./schema.ts";
import type { SqlDriverFactory } from "./sql_driver.ts";
import { bytes, openTest, tempDataDir, testClock } from "./journal_testing.ts";

const DRIVERS: [string, SqlDriverFactory][] = [["node:sqlite", openNodeSqlite], ["libsql", openLibsql]];

for (const [name, factory] of DRIVERS) {
  Deno.test(`${name}: WAL + synchronous=NORMAL hold after enforceDurability()`, async () => {
    await using tmp = await tempDataDir();
    const db = await factory(join(tmp.dir, "x.db"));
    await enforceDurability(db);
    assert.equal((await db.all("PRAGMA journal_mode"))[0]?.journal_mode, "wal");
    assert.equal((await db.all("PRAGMA synchronous"))[0]?.synchronous, 1);
    await db.close();
  });

  Deno.test(`${name}: values round-trip (text, integers past 2^32, blobs, null) and run() counts changes`, async () => {
    await using tmp = await tempDataDir();
    const db = await factory(join(tmp.dir, "x.db"));
    await db.exec("CREATE TABLE t (a TEXT, b INTEGER, c BLOB, d TEXT)");
    assert.equal(await db.run("INSERT INTO t VALUES (?, ?, ?, ?)", ["x", 2 ** 40, bytes("blob"), null]), 1);
    const rows = await db.all("SELECT * FROM t");
    assert.deepEqual({ ...rows[0] }, { a: "x", b: 2 ** 40, c: bytes("blob"), d: null });
    assert.equal(await db.run("UPDATE t SET a = 'y'"), 1);
    await db.close();
  });

  Deno.test(`${name}: the journal's command path runs on it`, async () => {
    await using tmp = await tempDataDir();
    const j = await openTest(tmp.dir, testClock(), { driver: factory });
    await Promise.all([1, 2, 3].map((i) => j.accept(`c${i}`, { kind: "k", retrySafe: true, selfTerminating: false })));
    await j.finish("c1", { state: "SUCCEEDED", body: bytes("r") });
    const r = await j.resolve("c1", { retrySafe: true, selfTerminating: false });
    assert.equal(r.action === "resend" && new TextDecoder().decode(r.entry.result.body), "r");
    assert.equal((await j.appendEvent("metric", bytes("m"))).appended, true);
    await j.close();
  });
}
