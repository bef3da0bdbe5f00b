/**
 * The storage seam: the few SQL calls the journal makes, so the SQLite binding is one file
 * (`driver_node_sqlite.ts` in production; `driver_libsql.ts` beside it for the benchmark and the contract suite).
 *
 * A driver owns exactly one connection. The journal serializes every call through its write queue, so a driver
 * never sees two statements at once and may implement transactions with plain `BEGIN`/`COMMIT`.
 *
 * @module
 */

/** A value bound to or read from SQL. Integers are JS numbers (the journal never exceeds 2^53). */
export type SqlValue = string | number | Uint8Array | null;

/** One row, by column name. */
export type SqlRow = Readonly<Record<string, SqlValue>>;

/** One SQLite connection. Every method rejects with the binding's own error on failure. */
export interface SqlDriver {
  /** The binding's name, for logs and the benchmark (`node:sqlite`, `libsql`). */
  readonly name: string;
  /** Runs one or more statements without parameters (DDL, pragmas, BEGIN/COMMIT). */
  exec(sql: string): Promise<void>;
  /** Runs one statement; resolves to the number of rows it changed. */
  run(sql: string, args?: readonly SqlValue[]): Promise<number>;
  /** Runs one query; resolves to all its rows. */
  all(sql: string, args?: readonly SqlValue[]): Promise<SqlRow[]>;
  /** Closes the connection; idempotent. */
  close(): Promise<void>;
  /**
   * The same calls answered on the calling thread, where the binding runs statements synchronously (`node:sqlite`):
   * the write queue runs its own statements and operations written as steps (`sql_steps.ts`) through it, without a
   * promise per statement. Absent for an async binding.
   */
  readonly sync?: SyncSqlDriver;
}

/** {@link SqlDriver}'s calls, answered at once; each throws the binding's own error on failure. */
export interface SyncSqlDriver {
  exec(sql: string): void;
  run(sql: string, args?: readonly SqlValue[]): number;
  all(sql: string, args?: readonly SqlValue[]): SqlRow[];
}

/** Opens a connection to the database file at `path`, creating it when absent. */
export type SqlDriverFactory = (path: string, opts?: { readOnly?: boolean }) => Promise<SqlDriver>;

/** Reads a column as a number; throws TypeError when the stored value is not one (a damaged or foreign row). */
export function colNum(row: SqlRow, col: string): number {
  const v = row[col];
  if (typeof v === "number") return v;
  throw new TypeError(`column ${col} holds ${v === null ? "NULL" : typeof v}, not a number`);
}

/** Reads a column as a string; throws TypeError otherwise. */
export function colStr(row: SqlRow, col: string): string {
  const v = row[col];
  if (typeof v === "string") return v;
  throw new TypeError(`column ${col} holds ${v === null ? "NULL" : typeof v}, not text`);
}

/** Reads a nullable text column. */
export function colStrOrNull(row: SqlRow, col: string): string | null {
  const v = row[col];
  return v === null || v === undefined ? null : colStr(row, col);
}

/** Reads a nullable blob column. */
export function colBytesOrNull(row: SqlRow, col: string): Uint8Array | null {
  const v = row[col];
  if (v === null || v === undefined) return null;
  if (v instanceof Uint8Array) return v;
  throw new TypeError(`column ${col} holds ${typeof v}, not a blob`);
}
