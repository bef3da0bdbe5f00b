/**
 * An execution's start (seed 002 §Executions): the limits both sides agree on, the worker's timers, whether the
 * host sends standard input, and the program's arguments.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { type BodyReader, BodyWriter, encodeUtf8, utf8 } from "./_bytes.ts";
import { MAX_DATA_BODY } from "./frame_kinds.ts";

/** The execution's key: its ID, then its generation, each a little-endian u64. */
export interface ExecKey {
  readonly id: bigint;
  readonly generation: bigint;
}

/** The longest data a body holds after the key and a stream: `exec::MAX_CHUNK`. */
export const MAX_CHUNK = MAX_DATA_BODY - 16 - 1;

/** A credit window: in bytes or in frames, of a size. */
export interface Window {
  readonly unit: "bytes" | "frames";
  readonly size: number;
}

/** `exec::Start`. */
export interface ExecStart {
  /** The most bytes of one input or output message. */
  readonly chunk: number;
  readonly input: Window;
  readonly output: Window;
  /** Whether standard output and error share one output pool (pool 3). */
  readonly sharedPool: boolean;
  readonly graceMs: number;
  readonly settlementMs: number;
  /** The timeout in milliseconds, or null for none. */
  readonly timeoutMs: number | null;
  /** Whether the host sends the program's standard input (else it reads the null device). */
  readonly stdin: boolean;
  /** The program's path (not searched in PATH), then its arguments; none holds a NUL. */
  readonly argv: readonly string[];
}

const BODY = "exec-start";

function window(r: BodyReader, what: string): Window {
  const unit = r.u8(`${what} unit`);
  if (unit > 1) throw new BodyError(BODY, `${what} unit ${unit} is neither 0 (bytes) nor 1 (frames)`);
  const size = r.u32(`${what} size`);
  if (size === 0) throw new BodyError(BODY, `${what} window is empty`);
  return { unit: unit === 0 ? "bytes" : "frames", size };
}

function flag(r: BodyReader, what: string): boolean {
  const v = r.u8(what);
  if (v > 1) throw new BodyError(BODY, `${what} is ${v}, not 0 or 1`);
  return v === 1;
}

/** Checks what a start promises; returns the problem or null. */
export function startProblem(s: ExecStart): string | null {
  if (!Number.isInteger(s.chunk) || s.chunk < 1 || s.chunk > MAX_CHUNK) {
    return `chunk ${s.chunk} is not 1 to ${MAX_CHUNK}`;
  }
  for (const w of [s.input, s.output]) {
    if (!Number.isInteger(w.size) || w.size < 1 || w.size > 0xffffffff) return `window size ${w.size} is out of range`;
  }
  if (s.argv.length === 0) return "no arguments";
  if (s.argv.length > 0xffff) return "more than 65,535 arguments";
  if (s.argv.some((a) => a.includes("\0"))) return "an argument holds a NUL byte";
  if (s.argv[0] === "") return "the program's path is empty";
  if (s.timeoutMs !== null && s.timeoutMs < 0) return "negative timeout";
  return null;
}

/** Reads the start after the key; the caller ends the reader. */
export function readStart(r: BodyReader): ExecStart {
  const chunk = r.u32("chunk");
  const input = window(r, "input");
  const output = window(r, "output");
  const sharedPool = flag(r, "shared pool");
  const graceMs = r.safeU64("grace");
  const settlementMs = r.safeU64("settlement");
  const hasTimeout = flag(r, "timeout flag");
  const timeout = r.safeU64("timeout");
  if (!hasTimeout && timeout !== 0) throw new BodyError(BODY, "a timeout without its flag");
  const stdin = flag(r, "stdin");
  const argc = r.u16("argument count");
  if (argc * 4 > r.left) throw new BodyError(BODY, `${argc} arguments cannot fit ${r.left} bytes`);
  const argv: string[] = [];
  for (let i = 0; i < argc; i++) {
    const n = r.u32("argument length");
    argv.push(utf8(r.take(n, "argument"), BODY));
  }
  const s: ExecStart = {
    chunk,
    input,
    output,
    sharedPool,
    graceMs,
    settlementMs,
    timeoutMs: hasTimeout ? timeout : null,
    stdin,
    argv,
  };
  const problem = startProblem(s);
  if (problem !== null) throw new BodyError(BODY, problem);
  return s;
}

/** Encodes a start body, key first. */
export function encodeStartBody(key: ExecKey, s: ExecStart): Uint8Array {
  const problem = startProblem(s);
  if (problem !== null) throw new BodyError(BODY, problem);
  const args = s.argv.map(encodeUtf8);
  const size = 16 + 4 + 5 + 5 + 1 + 8 + 8 + 1 + 8 + 1 + 2 + args.reduce((n, a) => n + 4 + a.length, 0);
  if (size > MAX_DATA_BODY) throw new BodyError(BODY, `the start holds ${size} bytes, beyond ${MAX_DATA_BODY}`);
  const w = new BodyWriter(size).u64(key.id).u64(key.generation).u32(s.chunk);
  for (const win of [s.input, s.output]) w.u8(win.unit === "bytes" ? 0 : 1).u32(win.size);
  w.u8(s.sharedPool ? 1 : 0).u64(s.graceMs).u64(s.settlementMs);
  w.u8(s.timeoutMs === null ? 0 : 1).u64(s.timeoutMs ?? 0).u8(s.stdin ? 1 : 0).u16(args.length);
  for (const a of args) w.u32(a.length).bytesOf(a);
  return w.done();
}
