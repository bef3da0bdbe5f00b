/**
 * The `@libsql/client` binding, kept beside `node:sqlite` so the benchmark and the driver contract suite can
 * compare them on figures. Not used by any role: its native addon needs `--allow-ffi`, which lifts Deno's
 * sandbox for the whole process (see mod.ts, "Storage").
 *
 * @module
 */
import { type Client, createClient, type InValue } from "@libsql/client";
import type { SqlDriver, SqlRow, SqlValue } from "./sql_driver.ts";

class LibsqlDriver implements SqlDriver {
  readonly name = "libsql";
  #c: Client | null;
  constructor(c: Client) {
    this.#c = c;
  }
  #get(): Client {
    if (this.#c === null) throw new Error("libsql connection is closed");
    return this.#c;
  }
  async exec(sql: string): Promise<void> {
    await this.#get().executeMultiple(sql);
  }
  async run(sql: string, args: readonly SqlValue[] = []): Promise<number> {
    const r = await this.#get().execute({ sql, args: args as InValue[] });
    return r.rowsAffected;
  }
  async all(sql: string, args: readonly SqlValue[] = []): Promise<SqlRow[]> {
    const r = await this.#get().execute({ sql, args: args as InValue[] });
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
    this.#c?.close();
    this.#c = null;
    return Promise.resolve();
  }
}

/** Opens `path` with `@libsql/client` (one local connection; `intMode: "number"`). */
export function openLibsql(path: string, _opts: { readOnly?: boolean } = {}): Promise<SqlDriver> {
  return Promise.resolve(new LibsqlDriver(createClient({ url: `file:${path}`, intMode: "number" })));
}
