/**
 * The production storage binding: Deno's built-in `node:sqlite` (SQLite compiled into the runtime). No native
 * addon, so no `--allow-ffi`: the role keeps its narrow `--allow-read`/`--allow-write` of its data directory.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue } from "node:sqlite";
import type { SqlDriver, SqlRow, SqlValue } from "./sql_driver.ts";

class NodeSqliteDriver implements SqlDriver {
  readonly name = "node:sqlite";
  #db: DatabaseSync | null;
  constructor(db: DatabaseSync) {
    this.#db = db;
  }
  #get(): DatabaseSync {
    if (this.#db === null) throw new Error("node:sqlite connection is closed");
    return this.#db;
  }
  exec(sql: string): Promise<void> {
    this.#get().exec(sql);
    return Promise.resolve();
  }
  run(sql: string, args: readonly SqlValue[] = []): Promise<number> {
    const r = this.#get().prepare(sql).run(...(args as SQLInputValue[]));
    return Promise.resolve(Number(r.changes));
  }
  all(sql: string, args: readonly SqlValue[] = []): Promise<SqlRow[]> {
    return Promise.resolve(this.#get().prepare(sql).all(...(args as SQLInputValue[])) as SqlRow[]);
  }
  close(): Promise<void> {
    if (this.#db !== null && this.#db.isOpen) this.#db.close();
    this.#db = null;
    return Promise.resolve();
  }
}

/** Opens `path` with `node:sqlite`. */
export function openNodeSqlite(path: string, opts: { readOnly?: boolean } = {}): Promise<SqlDriver> {
  return Promise.resolve(new NodeSqliteDriver(new DatabaseSync(path, { readOnly: opts.readOnly ?? false })));
}
