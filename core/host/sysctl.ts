/**
 * The `sysctl` unit: kernel parameters bcd sets, persisted in the helper's fixed file `/etc/sysctl.d/90-bcd.conf`
 * and written live (`/proc/sys`), each value read back.
 *
 * Settings: `{"values": {"<key>": "<value>" | <integer>, …}}`. A key must start with one of
 * {@link SYSCTL_PREFIXES} and be dotted lowercase segments (no `/`, no `..`); a value is one line of at most
 * {@link MAX_SYSCTL_VALUE} printable characters. Values compare with whitespace runs as one space (the kernel prints
 * `net.ipv4.ip_local_port_range` with a tab).
 *
 * What bcd did is recorded in the file itself: each key bcd manages carries the value it had before bcd first set it,
 * so a key dropped from the section gets that value back live and leaves the file, and nothing else changes.
 *
 * @module
 */
import { integer, object, refuse } from "./schema.ts";

/** The key prefixes bcd may set: networking, memory and a few GPU-host kernel knobs. */
export const SYSCTL_PREFIXES: readonly string[] = [
  "net.core.",
  "net.ipv4.",
  "net.ipv6.",
  "net.bridge.",
  "net.netfilter.",
  "vm.",
  "fs.inotify.",
  "fs.file-max",
  "kernel.numa_balancing",
  "kernel.pid_max",
  "kernel.threads-max",
];

/** The longest value. */
export const MAX_SYSCTL_VALUE = 256;
/** The most keys one unit sets. */
export const MAX_SYSCTL_KEYS = 256;

const _KEY = /^[a-z0-9_]+(?:\.[a-z0-9_-]+){1,8}$/;
// deno-lint-ignore no-control-regex
const _VALUE = /^[^\u0000-\u001f\u007f]*$/;

/** Whether `key` is a well-formed sysctl key under an allowed prefix. */
export function isAllowedSysctlKey(key: string): boolean {
  return key.length <= 128 && _KEY.test(key) && SYSCTL_PREFIXES.some((p) => key.startsWith(p));
}

/** Whether `v` is a value bcd may write. */
export function isSysctlValue(v: string): boolean {
  return v.length <= MAX_SYSCTL_VALUE && _VALUE.test(v) && v.trim() !== "";
}

/** A value as compared: trimmed, whitespace runs as one space. */
export function normalizeSysctlValue(v: string): string {
  return v.trim().split(/\s+/).join(" ");
}

/** The unit's checked settings: key → normalized value. */
export interface SysctlSettings {
  readonly values: Readonly<Record<string, string>>;
}

/** Checks the unit's settings. */
export function parseSysctlSettings(raw: Record<string, unknown>): SysctlSettings {
  const s = object("sysctl", "settings", raw, ["values"], ["values"]);
  const v = s.values;
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    refuse("sysctl", "settings.values", v, "is not an object");
  }
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_SYSCTL_KEYS) {
    refuse("sysctl", "settings.values", entries.length, `keys, more than ${MAX_SYSCTL_KEYS}`);
  }
  const values: Record<string, string> = {};
  for (const [k, raw] of entries) {
    if (!isAllowedSysctlKey(k)) {
      refuse("sysctl", "key", k, `is not a sysctl key under an allowed prefix (${SYSCTL_PREFIXES.join(", ")})`);
    }
    const text = typeof raw === "number"
      ? String(integer("sysctl", `settings.values.${k}`, raw, -(2 ** 53) + 1, 2 ** 53 - 1))
      : raw;
    if (typeof text !== "string" || !isSysctlValue(text)) {
      refuse("sysctl", `settings.values.${k}`, raw, `is not one line of at most ${MAX_SYSCTL_VALUE} characters`);
    }
    values[k] = normalizeSysctlValue(text);
  }
  return { values };
}

/** One key bcd manages, as the file records it. */
export interface ManagedSysctl {
  readonly value: string;
  /** The live value before bcd first set the key. */
  readonly original: string;
}

/** What the helper reports. */
export interface SysctlObserved {
  /** The live values of the keys asked for; `null` for a key this kernel does not have. */
  readonly live: Readonly<Record<string, string | null>>;
  /** The keys bcd's file manages. */
  readonly managed: Readonly<Record<string, ManagedSysctl>>;
}

/** A step: set a key (recording its original first), or give a key bcd manages its original back. */
export type SysctlStep =
  | { readonly op: "set"; readonly key: string; readonly value: string }
  | { readonly op: "restore"; readonly key: string };

/**
 * The minimal steps from `observed` to `desired` (`undefined`: the unit is not in the section): a key whose live or
 * recorded value differs is set; a managed key no longer wanted is restored. Sorted by key.
 */
export function planSysctl(desired: SysctlSettings | undefined, observed: SysctlObserved): SysctlStep[] {
  const want = desired?.values ?? {};
  const steps: SysctlStep[] = [];
  for (const key of Object.keys(want).sort()) {
    const value = want[key]!;
    const live = observed.live[key];
    const rec = observed.managed[key];
    if (live == null || normalizeSysctlValue(live) !== value || rec?.value !== value) {
      steps.push({ op: "set", key, value });
    }
  }
  for (const key of Object.keys(observed.managed).sort()) {
    if (!(key in want)) steps.push({ op: "restore", key });
  }
  return steps;
}

/** The keys whose live values a plan needs: the wanted ones and those bcd manages. */
export function sysctlKeysToRead(desired: SysctlSettings | undefined, managed: Iterable<string>): string[] {
  return [...new Set([...Object.keys(desired?.values ?? {}), ...managed])].sort();
}
