/**
 * The worker's probes (seed 002 §Probes, worker::probes and worker::mapping) and what each takes: FILE and
 * DIRECTORY are relative paths in the root, of normal components (no empty, `.` or `..` component, no leading or
 * trailing /); the other probes take no arguments. Both roots check a probe here before they run it, so the fake
 * and the Linux root refuse the same probes with the same problems.
 *
 * @module
 */
import type { Probe } from "../core/framing/mod.ts";
import { ProbeProblem } from "./root_errors.ts";

/** What a probe takes: nothing, a FILE, or a DIRECTORY. */
export type ProbeArgument = "none" | "FILE" | "DIRECTORY";

/** Every probe of the seed's tables, in their order. */
export const PROBES: Readonly<Record<string, ProbeArgument>> = {
  mounts: "none",
  contents: "none",
  "copy-up": "FILE",
  rename: "DIRECTORY",
  fill: "none",
  devices: "none",
  "first-partition": "none",
  cgroups: "none",
  processes: "none",
  hold: "none",
  map: "none",
  "map-refused": "none",
  "map-checks": "none",
  entries: "none",
  // bcd's own rows (guest/process_probes.ts): PID 1's collection of adopted orphans.
  orphan: "none",
  zombies: "none",
};

/** Whether `p` is a relative path of normal components. */
export function isRelativePath(p: string): boolean {
  return p !== "" && !p.startsWith("/") && p.split("/").every((c) => c !== "" && c !== "." && c !== "..");
}

/**
 * Checks a probe's name and arguments; returns its one path argument, or null for a probe without arguments.
 * Throws {@link ProbeProblem}: `unknown probe NAME`, `NAME takes no arguments`, `NAME takes one argument, FILE`,
 * `FILE x is not a relative path of normal components`.
 */
export function checkProbe(p: Probe): string | null {
  const arg = Object.hasOwn(PROBES, p.name) ? PROBES[p.name]! : null;
  if (arg === null) throw new ProbeProblem(`unknown probe ${p.name}`);
  if (arg === "none") {
    if (p.args.length > 0) throw new ProbeProblem(`${p.name} takes no arguments`);
    return null;
  }
  if (p.args.length !== 1) throw new ProbeProblem(`${p.name} takes one argument, ${arg}`);
  const path = p.args[0]!;
  if (!isRelativePath(path)) throw new ProbeProblem(`${arg} ${path} is not a relative path of normal components`);
  return path;
}
