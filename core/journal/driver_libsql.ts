/**
 * The `@libsql/client` binding, kept beside `node:sqlite` so the benchmark and the driver contract suite can
 * compare them on figures. Not used by any role: its native addon needs `--allow-ffi`, which lifts Deno's
 * sandbox for the whole process (see mod.ts, "Storage").
 *
 * Two things in `@libsql/client` 0.18's local client shape this file: it pools connections and rolls back
 * whatever a borrowed connection left open when it returns it, so a transaction must go through
 * `client.transaction("write")` (`BEGIN IMMEDIATE`), not a bare `BEGIN`; and a pragma applies to the one
 * connection that ran it, so the pool is limited to one connection (`concurrency: 1`) for the journal's
 * `synchronous` setting to hold for every statement.
 *
 * @module
 */
import { type Client, createClient, type InValue, type ResultSet, type Transaction } from "@libsql/client";
import type { SqlDriver, SqlRow, SqlValue } from "./sql_driver.ts";

class LibsqlDriver implements SqlDriver {
  readonly name = "libsql";
  #c: Client | null;
  #tx: Transaction | null = null;
  constructor(c: Client) {
    this.#c = c;
  }
  #get(): Client {
    if (this.#c === null) throw new Error("libsql connection is closed");
    return this.#c;
  }
  async exec(sql: string): Promise<void> {
    const s = sql.trim().toUpperCase();
    if (s === "BEGIN IMMEDIATE") {
      this.#tx = await this.#get().transaction("write");
    } else if (s === "COMMIT" && this.#tx !== null) {
      const tx = this.#tx;
      this.#tx = null;
      await tx.commit();
    } else if (s === "ROLLBACK" && this.#tx !== null) {
      const tx = this.#tx;
      this.#tx = null;
      await tx.rollback();
    } else if (this.#tx !== null) {
      await this.#tx.executeMultiple(sql);
    } else {
      await this.#get().executeMultiple(sql);
    }
  }
  #execute(sql: string, args: readonly SqlValue[]): Promise<ResultSet> {
    const stmt = { sql, args: args as InValue[] };
    return this.#tx !== null ? this.#tx.execute(stmt) : this.#get().execute(stmt);
  }
  async run(sql: string, args: readonly SqlValue[] = []): Promise<number> {
    return (await this.#execute(sql, args)).rowsAffected;
  }
  async all(sql: string, args: readonly SqlValue[] = []): Promise<SqlRow[]> {
    const r = await this.#execute(sql, args);
    return r.rows.map((row) => {
      const out: Record<string, SqlValue> = {};
      for (const col of r.columns) {
        const v = row[col];
        out[col] = v instanceof ArrayBuffer ? new Uint8Array(v) : typeof v === "bigint" ? Number(v) : v as SqlValue;
      }
      return out;
    });
  }
  close(): Promise<void> {
    this.#tx?.close();
    this.#tx = null;
    this.#c?.close();
    this.#c = null;
    return Promise.resolve();
  }
}

/** Opens `path` with `@libsql/client` (one pooled local connection; `intMode: "number"`). */
export function openLibsql(path: string, _opts: { readOnly?: boolean } = {}): Promise<SqlDriver> {
  return Promise.resolve(
    new LibsqlDriver(createClient({ url: `file:${path}`, intMode: "number", concurrency: 1 })),
  );
}
