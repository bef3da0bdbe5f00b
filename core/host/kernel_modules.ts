/**
 * The `kernel-modules` unit's settings and plan: modules loaded (`modprobe`), persisted for boot in
 * `/etc/modules-load.d/bcd.conf`, their options in `/etc/modprobe.d/bcd.conf`.
 *
 * Settings: `{"modules": [{"name": "br_netfilter", "options"?: "key=value key=value"}, …]}`. A name is 1–56 of
 * `[a-z0-9_-]` (compared with `-` as `_`, as the kernel does); options are space-separated `key` or `key=value`
 * tokens of `[A-Za-z0-9_.,:/-]`, at most 512 characters.
 *
 * Choices the seed leaves open, written down: what bcd did is recorded with the files (a module bcd found already
 * loaded is persisted but never unloaded by bcd: "removal only of modules bcd loaded"); a dropped module leaves the
 * files, and is unloaded (`modprobe -r`) only when bcd loaded it. New options of a module already loaded are persisted
 * and take effect at its next load; bcd does not reload a module in use.
 *
 * The node reaches the host through a {@link KernelModulesPort} (`modules.read` / `modules.apply` helper ops; the
 * helper's backend is `runtimes/host/modprobe_modules.ts`). After the steps, every wanted module must be loaded: one
 * that is not (modprobe failed: no such module for this kernel) fails the unit terminally, naming the module and
 * modprobe's words.
 *
 * @module
 */
import { object, refuse } from "./schema.ts";

const _NAME = /^[a-z0-9_-]{1,56}$/;
const _OPTIONS = /^[A-Za-z0-9_]+(?:=[A-Za-z0-9_.,:/-]*)?(?: [A-Za-z0-9_]+(?:=[A-Za-z0-9_.,:/-]*)?)*$/;
/** The most modules one unit names. */
export const MAX_MODULES = 64;

/** Whether `s` is a module name bcd may pass to modprobe (1–56 of `[a-z0-9_-]`). */
export function isModuleName(s: unknown): s is string {
  return typeof s === "string" && _NAME.test(s);
}

/** Whether `s` is a module's options text bcd may persist and pass (space-separated `key` / `key=value` tokens). */
export function isModuleOptions(s: unknown): s is string {
  return typeof s === "string" && s.length <= 512 && _OPTIONS.test(s);
}

/** A module name as the kernel compares it (`-` as `_`). */
export function moduleKey(name: string): string {
  return name.replaceAll("-", "_");
}

/** One wanted module. */
export interface ModuleSpec {
  readonly name: string;
  readonly options?: string;
}

/** The unit's checked settings. */
export interface KernelModuleSettings {
  readonly modules: readonly ModuleSpec[];
}

/** Checks the unit's settings. */
export function parseKernelModuleSettings(raw: Record<string, unknown>): KernelModuleSettings {
  const s = object("kernel-modules", "settings", raw, ["modules"], ["modules"]);
  if (!Array.isArray(s.modules) || s.modules.length > MAX_MODULES) {
    refuse("kernel-modules", "settings.modules", s.modules, `is not a list of at most ${MAX_MODULES} modules`);
  }
  const seen = new Set<string>();
  const modules: ModuleSpec[] = [];
  for (const [i, r] of (s.modules as unknown[]).entries()) {
    const path = `settings.modules[${i}]`;
    const m = object("kernel-modules", path, r, ["name", "options"], ["name"]);
    if (!isModuleName(m.name)) {
      refuse("kernel-modules", `${path}.name`, m.name, "is not a module name (1-56 of a-z 0-9 _ -)");
    }
    if (seen.has(moduleKey(m.name))) refuse("kernel-modules", `${path}.name`, m.name, "is named twice");
    seen.add(moduleKey(m.name));
    if (m.options !== undefined && !isModuleOptions(m.options)) {
      refuse("kernel-modules", `${path}.options`, m.options, "is not space-separated key or key=value tokens");
    }
    modules.push({ name: moduleKey(m.name), ...(m.options ? { options: m.options as string } : {}) });
  }
  return { modules };
}

/** A module bcd's files name. */
export interface ManagedModule {
  readonly name: string;
  readonly options?: string;
  /** Whether bcd loaded it (it was not loaded when bcd first persisted it). */
  readonly loadedByBcd: boolean;
}

/** What the helper reports. */
export interface KernelModulesObserved {
  /** Loaded modules (`/proc/modules`), `_` spelling. */
  readonly loaded: readonly string[];
  readonly managed: readonly ManagedModule[];
}

/** A step: persist (and load when not loaded) a module, or drop it from the files (unloading only what bcd loaded). */
export type KernelModuleStep =
  | { readonly op: "load"; readonly name: string; readonly options?: string }
  | { readonly op: "drop"; readonly name: string; readonly unload: boolean };

/** The minimal steps from `observed` to `desired`. */
export function planKernelModules(
  desired: KernelModuleSettings | undefined,
  observed: KernelModulesObserved,
): KernelModuleStep[] {
  const loaded = new Set(observed.loaded.map(moduleKey));
  const managed = new Map(observed.managed.map((m) => [moduleKey(m.name), m]));
  const steps: KernelModuleStep[] = [];
  const wanted = new Set<string>();
  for (const m of desired?.modules ?? []) {
    wanted.add(m.name);
    const rec = managed.get(m.name);
    if (!rec || rec.options !== m.options || !loaded.has(m.name)) {
      steps.push({ op: "load", name: m.name, ...(m.options ? { options: m.options } : {}) });
    }
  }
  for (const [name, rec] of [...managed].sort(([a], [b]) => a < b ? -1 : 1)) {
    if (!wanted.has(name)) steps.push({ op: "drop", name, unload: rec.loadedByBcd && loaded.has(name) });
  }
  return steps;
}
