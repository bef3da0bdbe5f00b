/**
 * The `meta` part: node id, `journal_id`, the event sequence, the last epoch, the applied generation and the
 * server time mark, stored as JSON values by key.
 *
 * @module
 */
import { JournalDamaged } from "./errors.ts";
import { colStr, type SqlDriver } from "./sql_driver.ts";
import type { JournalMeta } from "./types.ts";

/** The keys the journal writes. */
export type MetaKey = "node_id" | "event_seq" | "last_epoch" | "applied_generation" | "server_time_mark";

/** Reads the whole `meta` part. */
export async function getMeta(db: SqlDriver): Promise<JournalMeta> {
  const m = new Map<string, unknown>();
  for (const r of await db.all("SELECT key, value FROM meta")) m.set(colStr(r, "key"), JSON.parse(colStr(r, "value")));
  const num = (k: string) => {
    const v = m.get(k);
    if (typeof v !== "number" || !Number.isSafeInteger(v)) {
      throw new JournalDamaged(`meta ${k} is ${JSON.stringify(v)}`);
    }
    return v;
  };
  const jid = m.get("journal_id");
  if (typeof jid !== "string") throw new JournalDamaged("meta holds no journal_id");
  const nid = m.get("node_id");
  return {
    nodeId: typeof nid === "string" ? nid : null,
    journalId: jid,
    eventSeq: num("event_seq"),
    lastEpoch: num("last_epoch"),
    appliedGeneration: num("applied_generation"),
    serverTimeMark: num("server_time_mark"),
    createdAt: num("created_at"),
  };
}

/** Writes one meta key. */
export async function setMeta(db: SqlDriver, key: MetaKey, value: string | number | null): Promise<void> {
  await db.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [
    key,
    JSON.stringify(value),
  ]);
}
