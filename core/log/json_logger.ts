/**
 * bcd's logger: one JSON object per line, in the shape pino writes with bcd's options (level label first, ISO time,
 * the base fields and each child's bindings in order, the call's fields, then `msg`), so every reader of the agents'
 * logs (the LogRing of `logs.collect`, tests, operators' tooling) sees the same lines as before. It replaces the
 * `pino` package, whose CommonJS entry loaded Node's module loader, `fs`, `worker_threads` and their kin at every
 * start: 42 ms of the 152 ms CPU the bundled sim spent before its first `Hello`, and 7 MiB (issue 24).
 *
 * What it keeps of pino: the levels and their numbers, `child(bindings)`, a settable `level`, a call as
 * `log.info(fields?, msg?)` or `log.info(msg)` or `log.info(error)`, pino's `err` serialization (`type`, `message`,
 * `stack` and the error's own fields, causes folded in as `pino-std-serializers` does), `"[Circular]"` for a cycle,
 * fields written as given (a key a binding also has appears twice, as pino writes it; the last one wins when read).
 * `%s`/`%d`/`%j` placeholders in a message are filled from the call's further arguments.
 *
 * @module
 */

/** The levels, lowest first, with pino's numbers. */
const _LEVEL_VALUES = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;

/** A level name of {@link Logger.level}. */
export type LevelName = keyof typeof _LEVEL_VALUES;

/** One level's method: `(fields, msg?)`, `(msg, ...args)` or `(error, msg?)`. */
export type LogFn = (fieldsOrMsg: unknown, msg?: string, ...args: unknown[]) => void;

/** Where lines go: each call writes one line ending in `\n`. */
export interface LogDestination {
  write(line: string): void;
}

/** The logger every module takes. */
export interface Logger {
  /** The lowest level written; settable. */
  level: string;
  fatal: LogFn;
  error: LogFn;
  warn: LogFn;
  info: LogFn;
  debug: LogFn;
  trace: LogFn;
  /** A logger whose lines carry `bindings` after this one's; it starts at this one's level. */
  child(bindings: Record<string, unknown>): Logger;
  /** Whether a call at `level` would write. */
  isLevelEnabled(level: string): boolean;
}

function _isLevel(level: string): level is LevelName {
  return Object.hasOwn(_LEVEL_VALUES, level);
}

/** An error as pino-std-serializers' `err` writes it: causes folded into `message` and `stack`. */
function _error(e: Error): Record<string, unknown> {
  let message = e.message;
  let stack = e.stack ?? "";
  const visited = new Set<unknown>([e]);
  for (let c: unknown = e.cause; c instanceof Error && !visited.has(c); c = c.cause) {
    visited.add(c);
    if (c.message !== "") message += `: ${c.message}`;
    stack += `\ncaused by: ${c.stack ?? ""}`;
  }
  const out: Record<string, unknown> = { type: e.constructor?.name ?? e.name, message, stack };
  if (e instanceof AggregateError) out.aggregateErrors = e.errors.map((x) => x instanceof Error ? _error(x) : x);
  for (const [k, v] of Object.entries(e)) {
    if (!(k in out) && k !== "cause") out[k] = v;
  }
  return out;
}

/** JSON of `v` with cycles as `"[Circular]"` and bigints as their digits, as pino's safe-stable-stringify writes them. */
function _json(v: unknown, key: string): string {
  const ancestors: unknown[] = [];
  const text = JSON.stringify(v, function (this: unknown, k: string, x: unknown) {
    if (k === "" && key === "err" && x instanceof Error) x = _error(x);
    if (typeof x === "bigint") return `__bcd_bigint__${x}__`;
    if (typeof x !== "object" || x === null) return x;
    while (ancestors.length > 0 && ancestors.at(-1) !== this) ancestors.pop();
    if (ancestors.includes(x)) return "[Circular]";
    ancestors.push(x);
    return x;
  });
  return text.includes("__bcd_bigint__") ? text.replace(/"__bcd_bigint__(-?\d+)__"/g, "$1") : text;
}

/** `key: value` pairs as pino appends them (`,"k":v`), skipping undefined values and functions. */
function _fields(o: Record<string, unknown>): string {
  let s = "";
  for (const [k, v] of Object.entries(o)) {
    const t = typeof v;
    if (v === undefined || t === "function" || t === "symbol") continue;
    // A string, number or boolean needs none of _json's work (no cycle, bigint or error to look for): most fields
    // are ids and states, and a line per settled command is written on the event loop (issue 24).
    s += `,${JSON.stringify(k)}:${
      t === "string" || t === "number" || t === "boolean" ? JSON.stringify(v) : _json(v, k)
    }`;
  }
  return s;
}

let _isoMs = NaN;
let _iso = "";

/** The ISO time of now; lines written in the same millisecond share one formatting. */
function _now(): string {
  const ms = Date.now();
  if (ms !== _isoMs) {
    _iso = new Date(ms).toISOString();
    _isoMs = ms;
  }
  return _iso;
}

function _format(msg: string, args: readonly unknown[]): string {
  if (args.length === 0) return msg;
  let i = 0;
  return msg.replace(/%[sdifjoO%]/g, (p) => {
    if (p === "%%") return "%";
    if (i >= args.length) return p;
    const a = args[i++];
    if (p === "%s") return String(a);
    if (p === "%d" || p === "%f") return String(Number(a));
    if (p === "%i") return String(Math.trunc(Number(a)));
    return _json(a, "");
  });
}

class _JsonLogger implements Logger {
  #value: number;
  #name: string;
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;

  constructor(
    private readonly dest: LogDestination,
    /** The base fields and every binding up the chain, already written as `,"k":v`. */
    private readonly chain: string,
    level: string,
  ) {
    this.#name = "info";
    this.#value = _LEVEL_VALUES.info;
    this.level = level;
    for (const name of ["fatal", "error", "warn", "info", "debug", "trace"] as const) {
      const value = _LEVEL_VALUES[name];
      this[name] = (a, msg, ...args) => {
        if (value >= this.#value) this.#write(name, a, msg, args);
      };
    }
  }

  get level(): string {
    return this.#name;
  }

  set level(level: string) {
    if (!_isLevel(level)) throw new RangeError(`unknown log level "${level}"`);
    this.#name = level;
    this.#value = _LEVEL_VALUES[level];
  }

  isLevelEnabled(level: string): boolean {
    return _isLevel(level) && level !== "silent" && _LEVEL_VALUES[level] >= this.#value;
  }

  child(bindings: Record<string, unknown>): Logger {
    return new _JsonLogger(this.dest, this.chain + _fields(bindings), this.#name);
  }

  #write(name: LevelName, a: unknown, msg: string | undefined, args: unknown[]): void {
    let fields = "";
    let message: string | undefined = msg;
    if (typeof a === "string") {
      message = _format(a, msg === undefined ? args : [msg, ...args]);
    } else if (a instanceof Error) {
      fields = `,"err":${_json(a, "err")}`;
      message = msg === undefined ? a.message : _format(msg, args);
    } else if (typeof a === "object" && a !== null) {
      fields = _fields(a as Record<string, unknown>);
      if (msg !== undefined) message = _format(msg, args);
    } else if (a !== undefined) {
      message = String(a);
    }
    const m = message === undefined ? "" : `,"msg":${JSON.stringify(message)}`;
    this.dest.write(`{"level":"${name}","time":"${_now()}"${this.chain}${fields}${m}}\n`);
  }
}

/** A logger writing to `dest` at `level` with `base` fields on every line. */
export function jsonLogger(dest: LogDestination, level: string, base: Record<string, unknown> = {}): Logger {
  return new _JsonLogger(dest, _fields(base), level);
}

/** Standard error, written synchronously (a line is out before the call returns, as pino's `sync: true`). */
export function stderrDestination(): LogDestination {
  const enc = new TextEncoder();
  return {
    write(line: string): void {
      const bytes = enc.encode(line);
      for (let off = 0; off < bytes.length;) off += Deno.stderr.writeSync(bytes.subarray(off));
    },
  };
}
