/**
 * A doctor report: one line per check with `ok`, `warn` or `fail`, what was found and, short of `ok`, a hint saying
 * what to do; the exit status is the worst result's ({@link DOCTOR_EXIT}). The JSON form (`--json`) is the same
 * report as one object, and {@link parseDoctorReport} reads it back (bounded, every field checked).
 *
 * @module
 */

/** A check's result, best first. */
export type DoctorStatus = "ok" | "warn" | "fail";

/** The results in order of badness. */
export const DOCTOR_STATUSES: readonly DoctorStatus[] = ["ok", "warn", "fail"];

/** One check's line. */
export interface DoctorCheck {
  /** A short stable name (`helper`, `journal.lock`, `runtimes`). */
  readonly name: string;
  readonly status: DoctorStatus;
  /** What was found, one line. */
  readonly detail: string;
  /** What to do about it; present unless `ok`. */
  readonly hint?: string;
}

/** The whole report. */
export interface DoctorReport {
  readonly role: string;
  readonly worst: DoctorStatus;
  readonly checks: readonly DoctorCheck[];
}

/**
 * The exit status by the worst result: 0 every check ok, 4 the worst is a warning, 5 a check failed (1 and 2 keep
 * their meaning for every tool: internal error, usage).
 */
export const DOCTOR_EXIT: Readonly<Record<DoctorStatus, number>> = { ok: 0, warn: 4, fail: 5 };

/** The worst status of `checks` (`ok` for none). */
export function worstOf(checks: readonly DoctorCheck[]): DoctorStatus {
  let w = 0;
  for (const c of checks) w = Math.max(w, DOCTOR_STATUSES.indexOf(c.status));
  return DOCTOR_STATUSES[w]!;
}

/** A report of `checks`, its worst result computed. */
export function doctorReport(role: string, checks: readonly DoctorCheck[]): DoctorReport {
  return { role, worst: worstOf(checks), checks };
}

/** A check; `hint` is dropped for `ok` and required otherwise. */
export function check(name: string, status: DoctorStatus, detail: string, hint?: string): DoctorCheck {
  if (status === "ok") return { name, status, detail };
  if (hint === undefined || hint === "") throw new TypeError(`doctor check ${name} is ${status} without a hint`);
  return { name, status, detail, hint };
}

/** The report as text: one line per check (`ok   name: detail`, then ` — hint: …` short of ok) and a last line. */
export function renderDoctorText(r: DoctorReport): string {
  const lines = r.checks.map((c) =>
    `${c.status.padEnd(4)} ${c.name}: ${c.detail}${c.hint !== undefined ? ` — hint: ${c.hint}` : ""}`
  );
  const n = (s: DoctorStatus) => r.checks.filter((c) => c.status === s).length;
  lines.push(`bcd-${r.role} doctor: ${n("ok")} ok, ${n("warn")} warn, ${n("fail")} fail`);
  return lines.join("\n");
}

/** A `--json` document that is not a doctor report. */
export class DoctorReportInvalid extends Error {
  override name = "DoctorReportInvalid";
}

/** The most bytes of a report {@link parseDoctorReport} reads, and the most checks. */
export const MAX_REPORT_BYTES = 256 * 1024;
const MAX_CHECKS = 256;

function _str(v: unknown, what: string): string {
  if (typeof v !== "string" || v.length > 4096) throw new DoctorReportInvalid(`${what} is not a string of ≤ 4096`);
  return v;
}

function _status(v: unknown, what: string): DoctorStatus {
  if (!DOCTOR_STATUSES.includes(v as DoctorStatus)) {
    throw new DoctorReportInvalid(`${what} ${JSON.stringify(v)} is not ok, warn or fail`);
  }
  return v as DoctorStatus;
}

/** Reads a report back from its JSON; refuses anything else with {@link DoctorReportInvalid}. */
export function parseDoctorReport(text: string): DoctorReport {
  if (text.length > MAX_REPORT_BYTES) throw new DoctorReportInvalid(`a report is at most ${MAX_REPORT_BYTES} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    if (e instanceof SyntaxError) throw new DoctorReportInvalid(`not JSON: ${e.message}`, { cause: e });
    throw e;
  }
  if (typeof raw !== "object" || raw === null) throw new DoctorReportInvalid("a report is an object");
  const o = raw as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => !["role", "worst", "checks"].includes(k));
  if (extra.length > 0) throw new DoctorReportInvalid(`unknown field ${extra[0]}`);
  if (!Array.isArray(o.checks) || o.checks.length > MAX_CHECKS) {
    throw new DoctorReportInvalid(`checks is not a list of ≤ ${MAX_CHECKS}`);
  }
  const checks = o.checks.map((c, i) => {
    if (typeof c !== "object" || c === null) throw new DoctorReportInvalid(`checks[${i}] is not an object`);
    const f = c as Record<string, unknown>;
    const bad = Object.keys(f).filter((k) => !["name", "status", "detail", "hint"].includes(k));
    if (bad.length > 0) throw new DoctorReportInvalid(`checks[${i}]: unknown field ${bad[0]}`);
    const status = _status(f.status, `checks[${i}].status`);
    const hint = f.hint === undefined ? undefined : _str(f.hint, `checks[${i}].hint`);
    if ((status === "ok") !== (hint === undefined)) {
      throw new DoctorReportInvalid(`checks[${i}]: a hint comes with warn and fail, and only with them`);
    }
    return check(_str(f.name, `checks[${i}].name`), status, _str(f.detail, `checks[${i}].detail`), hint);
  });
  const r = doctorReport(_str(o.role, "role"), checks);
  if (_status(o.worst, "worst") !== r.worst) {
    throw new DoctorReportInvalid(`worst is ${o.worst} but the checks' worst is ${r.worst}`);
  }
  return r;
}
