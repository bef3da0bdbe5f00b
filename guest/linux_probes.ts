/**
 * What the worker's probes read from a Linux guest (seed 002 §Probes): the mount table with its escapes, the
 * block devices, the cgroups, and the kernel's records of a process. Each reader is a pure function over the
 * file's text, so its unit tests need no guest.
 *
 * @module
 */
import type { Facts } from "../core/framing/mod.ts";
import type { MountEntry } from "./proc/mountinfo.ts";

/** The mounts probe's facts for named mount points: NAME.count, and of the topmost, type, source, options, super. */
export function mountFacts(entries: readonly MountEntry[], points: ReadonlyArray<readonly [string, string]>): Facts {
  const facts: [string, string][] = [];
  for (const [name, point] of points) {
    const at = entries.filter((e) => e.mountPoint === point);
    facts.push([`${name}.count`, String(at.length)]);
    const top = at.at(-1);
    if (top === undefined) continue;
    facts.push([`${name}.type`, top.type], [`${name}.source`, top.source], [`${name}.options`, top.options], [
      `${name}.super`,
      top.superOptions,
    ]);
  }
  return facts;
}

/** The fields of /proc/PID/status that the processes probe reports. */
export function parseStatus(text: string): { state: string; ppid: string } | null {
  const get = (k: string) => /^(\S+):\s*(.*)$/m.exec(text.split("\n").find((l) => l.startsWith(`${k}:`)) ?? "")?.[2];
  const state = get("State");
  const ppid = get("PPid");
  if (state === undefined || ppid === undefined) return null;
  return { state: state.split(" ")[0]!, ppid };
}

/** The ID= field of an os-release file, unquoted. */
export function osReleaseId(text: string): string | null {
  for (const line of text.split("\n")) {
    const m = /^ID=(.*)$/.exec(line.trim());
    if (m) return m[1]!.replace(/^["']|["']$/g, "");
  }
  return null;
}

/** MemTotal of /proc/meminfo, in bytes. */
export function memTotal(text: string): number | null {
  const m = /^MemTotal:\s+(\d+) kB$/m.exec(text);
  return m ? Number(m[1]) * 1024 : null;
}

/** A value a probe could not read: absent when the file does not exist, else `unreadable: PROBLEM`. */
export async function readFact(path: string): Promise<string | null> {
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    return `unreadable: ${e instanceof Error ? e.message : String(e)}`;
  }
}
