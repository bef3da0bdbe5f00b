/**
 * The production storage binding: Deno's built-in `node:sqlite` (SQLite compiled into the runtime). No native
 * addon, so no `--allow-ffi`: the role keeps its narrow `--allow-read`/`--allow-write` of its data directory.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import type { SqlDriver, SqlRow, SqlValue, SyncSqlDriver } from "./sql_driver.ts";

class NodeSqliteDriver implements SqlDriver {
  readonly name = "node:sqlite";
  #db: DatabaseSync | null;
  /** Prepared statements by SQL text: the journal runs a few dozen distinct statements over and over. */
  #cache = new Map<string, StatementSync>();
  constructor(db: DatabaseSync) {
    this.#db = db;
  }
  #stmt(sql: string): StatementSync {
    let st = this.#cache.get(sql);
    if (st === undefined) {
      st = this.#get().prepare(sql);
      if (this.#cache.size < 256) this.#cache.set(sql, st);
    }
    return st;
  }
  #get(): DatabaseSync {
    if (this.#db === null) throw new Error("node:sqlite connection is closed");
    return this.#db;
  }
  /** The calls answered at once (node:sqlite is synchronous); the async ones below wrap them. */
  readonly sync: SyncSqlDriver = {
    exec: (sql) => {
      // A single statement without parameters goes through the cache; scripts (DDL, pragmas) run as they are.
      if (sql.includes(";")) this.#get().exec(sql);
      else this.#stmt(sql).run();
    },
    run: (sql, args = []) => Number(this.#stmt(sql).run(...(args as SQLInputValue[])).changes),
    all: (sql, args = []) => this.#stmt(sql).all(...(args as SQLInputValue[])) as SqlRow[],
  };
  exec(sql: string): Promise<void> {
    this.sync.exec(sql);
    return Promise.resolve();
  }
  run(sql: string, args: readonly SqlValue[] = []): Promise<number> {
    return Promise.resolve(this.sync.run(sql, args));
  }
  all(sql: string, args: readonly SqlValue[] = []): Promise<SqlRow[]> {
    return Promise.resolve(this.sync.all(sql, args));
  }
  close(): Promise<void> {
    this.#cache.clear();
    if (this.#db !== null && this.#db.isOpen) this.#db.close();
    this.#db = null;
    return Promise.resolve();
  }
}

/** Opens `path` with `node:sqlite`. */
export function openNodeSqlite(path: string, opts: { readOnly?: boolean } = {}): Promise<SqlDriver> {
  return Promise.resolve(new NodeSqliteDriver(new DatabaseSync(path, { readOnly: opts.readOnly ?? false })));
}
