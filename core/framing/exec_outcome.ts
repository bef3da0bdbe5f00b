/**
 * An execution's outcome (seed 002 §Executions): the program's status, the cause, a launch failure, and flags.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import type { BodyReader, BodyWriter } from "./_bytes.ts";

/** A cause: 1 cancellation, 2 drop, 3 timeout, 4 reset, 5 disconnection. */
export type Cause = "cancel" | "drop" | "timeout" | "reset" | "disconnect";
/** The causes in code order (code = index + 1). */
export const CAUSES: readonly Cause[] = ["cancel", "drop", "timeout", "reset", "disconnect"];
/** The causes the host's cancellation may name. */
export const HOST_CAUSES: readonly Cause[] = ["cancel", "drop", "timeout"];

/** The program's status. */
export type ProgramStatus =
  | { readonly kind: "none" }
  | { readonly kind: "exit"; readonly code: number }
  | { readonly kind: "signal"; readonly signal: number };

/** `exec::Outcome`. */
export interface Outcome {
  readonly status: ProgramStatus;
  readonly cause: Cause | null;
  /** A launch that failed: stage 0 is the worker's refusal of the start. */
  readonly launch: { readonly stage: number; readonly errno: number } | null;
  readonly stdoutLost: boolean;
  readonly stderrLost: boolean;
  readonly reusable: boolean;
}

/** The size of an encoded outcome. */
export const OUTCOME_BYTES = 1 + 4 + 1 + 1 + 4 + 4 + 1;

/** The code of a cause. */
export function causeCode(c: Cause): number {
  return CAUSES.indexOf(c) + 1;
}

/** The cause of a code, or a {@link BodyError}. */
export function causeOf(code: number, body: string): Cause {
  const c = CAUSES[code - 1];
  if (c === undefined) throw new BodyError(body, `cause ${code} is not 1 to 5`);
  return c;
}

/** Writes an outcome. */
export function writeOutcome(w: BodyWriter, o: Outcome): void {
  const s = o.status;
  w.u8(s.kind === "none" ? 0 : s.kind === "exit" ? 1 : 2).i32(
    s.kind === "exit" ? s.code : s.kind === "signal" ? s.signal : 0,
  );
  w.u8(o.cause === null ? 0 : causeCode(o.cause));
  w.u8(o.launch === null ? 0 : 1).u32(o.launch?.stage ?? 0).i32(o.launch?.errno ?? 0);
  w.u8((o.stdoutLost ? 1 : 0) | (o.stderrLost ? 2 : 0) | (o.reusable ? 4 : 0));
}

/** Reads an outcome; refuses unknown values and fields that contradict their flags. */
export function readOutcome(r: BodyReader): Outcome {
  const body = "exec-outcome";
  const sk = r.u8("status");
  const code = r.i32("status code");
  if (sk > 2) throw new BodyError(body, `status ${sk} is not 0 to 2`);
  if (sk === 0 && code !== 0) throw new BodyError(body, "a code without a status");
  const status: ProgramStatus = sk === 0
    ? { kind: "none" }
    : sk === 1
    ? { kind: "exit", code }
    : { kind: "signal", signal: code };
  const cc = r.u8("cause");
  const cause = cc === 0 ? null : causeOf(cc, body);
  const lf = r.u8("launch failed");
  if (lf > 1) throw new BodyError(body, `launch flag ${lf} is not 0 or 1`);
  const stage = r.u32("stage");
  const errno = r.i32("errno");
  if (lf === 0 && (stage !== 0 || errno !== 0)) throw new BodyError(body, "a launch stage without a launch failure");
  const flags = r.u8("flags");
  if ((flags & ~7) !== 0) throw new BodyError(body, `unknown flags ${flags}`);
  return {
    status,
    cause,
    launch: lf === 1 ? { stage, errno } : null,
    stdoutLost: (flags & 1) !== 0,
    stderrLost: (flags & 2) !== 0,
    reusable: (flags & 4) !== 0,
  };
}
