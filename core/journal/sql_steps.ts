/**
 * Journal operations written once for both kinds of binding: a generator that yields each SQL call it needs and is
 * handed that call's result. On a binding that answers on the calling thread ({@link SyncSqlDriver}: `node:sqlite`,
 * production) {@link runStepsSync} runs it to its end at once, with no promise and no promise-job turn per statement;
 * on an async binding (`@libsql/client`, kept for the benchmark and the driver contract suite) {@link runSteps}
 * awaits each call.
 *
 * Why (issue 24): `node:sqlite` runs every statement synchronously, yet each journal call went through an async
 * operation per call and per statement, each a promise and a promise-job turn on the event loop, the one thread every
 * command's dispatch, statements and commits share. The hot operations (accept, markRunning, finish, the entry read
 * of resolve) are written as steps, so the write queue runs them inline.
 *
 * @example
 * ```ts
 * function* countDone(): SqlSteps<number> {
 *   const rows = yield* all("SELECT count(*) AS n FROM commands WHERE state = 'done'");
 *   return colNum(rows[0]!, "n");
 * }
 * const n = await runSteps(db, countDone());
 * ```
 *
 * @module
 */
import type { SqlDriver, SqlRow, SqlValue, SyncSqlDriver } from "./sql_driver.ts";

/** One SQL call an operation asks for: `run` (answered with the rows changed) or `all` (answered with the rows). */
export interface SqlCall {
  readonly all: boolean;
  readonly sql: string;
  readonly args: readonly SqlValue[];
}

/** An operation as steps: yields {@link SqlCall}s, is handed each call's result, returns its value. */
export type SqlSteps<T> = Generator<SqlCall, T, number | SqlRow[]>;

/** Runs one statement; its result is the number of rows it changed (`SqlDriver.run`). */
export function* run(sql: string, args: readonly SqlValue[] = []): Generator<SqlCall, number, number | SqlRow[]> {
  return (yield { all: false, sql, args }) as number;
}

/** Runs one query; its result is every row (`SqlDriver.all`). */
export function* all(sql: string, args: readonly SqlValue[] = []): Generator<SqlCall, SqlRow[], number | SqlRow[]> {
  return (yield { all: true, sql, args }) as SqlRow[];
}

/**
 * Runs `steps` to its end on the calling thread. A failing call is thrown into the steps (their `finally` blocks run)
 * and out of this call.
 */
export function runStepsSync<T>(db: SyncSqlDriver, steps: SqlSteps<T>): T {
  let r = steps.next();
  while (!r.done) {
    const c = r.value;
    let value: number | SqlRow[];
    try {
      value = c.all ? db.all(c.sql, c.args) : db.run(c.sql, c.args);
    } catch (e) {
      r = steps.throw(e);
      continue;
    }
    r = steps.next(value);
  }
  return r.value;
}

/** Runs `steps` on any binding: at once on a synchronous one, each call awaited on an async one. */
export async function runSteps<T>(db: SqlDriver, steps: SqlSteps<T>): Promise<T> {
  if (db.sync !== undefined) return runStepsSync(db.sync, steps);
  let r = steps.next();
  while (!r.done) {
    const c = r.value;
    let value: number | SqlRow[];
    try {
      value = c.all ? await db.all(c.sql, c.args) : await db.run(c.sql, c.args);
    } catch (e) {
      r = steps.throw(e);
      continue;
    }
    r = steps.next(value);
  }
  return r.value;
}
