/**
 * The `host` section's converger (000 §Convergence and status): the section's units, checked whole before anything
 * runs, then each registered unit in {@link UNIT_ORDER}; a unit the section no longer lists undoes what bcd did.
 *
 * | outcome                                   | section status                                                   |
 * | ----------------------------------------- | ---------------------------------------------------------------- |
 * | unknown unit, unit twice, bad settings    | `FAILED`, reason `UnknownUnit` / `DuplicateUnit` / `InvalidUnitSettings`, nothing applied |
 * | a listed unit this build has no driver for | `FAILED`, reason `UnitUnsupported:<unit>`, nothing applied      |
 * | a unit fails terminally                   | `FAILED`, reason `UnitFailed:<unit>`; its dependents not run, named in the message |
 * | a unit needs a reboot                     | `PROGRESSING`, reason `RebootRequired`, condition `RebootRequired` (subject `host`); bcd never reboots by itself |
 * | a unit fails retryably or is short        | `PROGRESSING`, reason `UnitProgressing:<unit>`; retried next pass |
 * | every unit converged                      | `CONVERGED`                                                      |
 *
 * A unit that has not converged (failed, pending, or waiting for a reboot) stops the units that depend on it
 * ({@link UNIT_DEPENDS}); units that do not depend on it still run. With `[host] units = false` the node uses
 * {@link externallyManagedHost} instead: a non-empty section is `UNSUPPORTED` `HostManagedExternally`, no condition,
 * and it does not hold back `observed_generation`.
 *
 * @module
 */
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../converge/engine.ts";
import { isEmptySection } from "../converge/section.ts";
import { HostUnitError, type UnitDriver, type UnitResult } from "./unit.ts";
import { dependentsOf, HostSettingsError, parseHostSection, UNIT_ORDER, type UnitName } from "./units.ts";

/** The condition a unit that needs a reboot raises. */
export const REBOOT_REQUIRED = "RebootRequired";

/** Converges the host's units. */
export class HostConverger {
  readonly #drivers = new Map<UnitName, UnitDriver>();

  constructor(drivers: readonly UnitDriver[]) {
    for (const d of drivers) {
      if (this.#drivers.has(d.name)) throw new TypeError(`two drivers for host unit ${d.name}`);
      this.#drivers.set(d.name, d);
    }
  }

  /** The units this build can converge. */
  get units(): UnitName[] {
    return UNIT_ORDER.filter((u) => this.#drivers.has(u));
  }

  /** One pass over `section` (the wire's `HostSection`, or `undefined`). */
  async converge(section: unknown, ctx: ApplyContext): Promise<ApplyOutcome> {
    const desired = new Map<UnitName, unknown>();
    try {
      for (const [name, raw] of parseHostSection(section)) {
        const d = this.#drivers.get(name);
        if (!d) {
          return {
            kind: "failed",
            reason: `UnitUnsupported:${name}`,
            message: `this build of bcd has no ${name} unit`,
          };
        }
        desired.set(name, d.parse(raw.settings));
      }
    } catch (e) {
      if (e instanceof HostSettingsError) return { kind: "failed", reason: e.reason, message: e.message };
      throw e;
    }
    const stopped = new Map<UnitName, UnitName>();
    const failed: { unit: UnitName; message: string }[] = [];
    const pending: { unit: UnitName; message: string }[] = [];
    const reboot: { unit: UnitName; message: string }[] = [];
    for (const name of UNIT_ORDER) {
      const d = this.#drivers.get(name);
      if (!d || stopped.has(name)) continue;
      const log = ctx.log.child({ unit: name });
      let r: UnitResult;
      try {
        r = await d.converge(desired.get(name));
      } catch (e) {
        const terminal = e instanceof HostUnitError && e.terminal;
        const message = e instanceof Error ? e.message : String(e);
        log.warn({ err: message, terminal }, "host unit failed");
        (terminal ? failed : pending).push({ unit: name, message });
        for (const dep of dependentsOf(name)) if (!stopped.has(dep)) stopped.set(dep, name);
        continue;
      }
      if (r.steps > 0) log.info({ steps: r.steps }, "host unit applied");
      if (r.rebootRequired) reboot.push({ unit: name, message: r.rebootRequired });
      else if (r.pending) pending.push({ unit: name, message: r.pending });
      if (r.rebootRequired || r.pending) {
        for (const dep of dependentsOf(name)) if (!stopped.has(dep)) stopped.set(dep, name);
      }
    }
    const waits = [...stopped].filter(([u]) => desired.has(u)).map(([u, on]) => `${u} (waits for ${on})`);
    const tail = waits.length ? `; not applied: ${waits.join(", ")}` : "";
    if (reboot.length) {
      ctx.conditions.set(REBOOT_REQUIRED, "host", "True", reboot.map((r) => r.unit).join(","), _join(reboot));
    } else {
      ctx.conditions.clear(REBOOT_REQUIRED, "host");
    }
    if (failed.length) {
      return { kind: "failed", reason: `UnitFailed:${failed[0]!.unit}`, message: _join(failed) + tail };
    }
    if (reboot.length) return { kind: "progressing", reason: REBOOT_REQUIRED, message: _join(reboot) + tail };
    if (pending.length) {
      return { kind: "progressing", reason: `UnitProgressing:${pending[0]!.unit}`, message: _join(pending) + tail };
    }
    return { kind: "converged" };
  }
}

function _join(xs: readonly { unit: UnitName; message: string }[]): string {
  return xs.map((x) => x.message.startsWith(`${x.unit}`) ? x.message : `${x.unit}: ${x.message}`).join("; ");
}

/**
 * The engine's `host` converger over {@link HostConverger}. The units observe and plan themselves inside one pass
 * (each unit's observation depends on its own settings), so `plan` hands the whole section to `apply` as one action.
 */
export function hostSectionConverger(host: HostConverger): SectionConverger<unknown, null, "units"> {
  return {
    section: "host",
    observe: () => Promise.resolve(null),
    plan: () => ["units"],
    apply: (_actions, desired, ctx) => host.converge(desired, ctx),
  };
}

/** `[host] units = false`: no converger; a non-empty section is `UNSUPPORTED` `HostManagedExternally`, no condition. */
export function externallyManagedHost(): SectionConverger<unknown, null, "unsupported"> {
  return {
    section: "host",
    observe: () => Promise.resolve(null),
    plan: (desired) => isEmptySection(desired) ? [] : ["unsupported"],
    apply: () =>
      Promise.resolve({
        kind: "unsupported",
        reason: "HostManagedExternally",
        message: "[host] units = false: this host's configuration is managed outside bcd",
        condition: false,
      }),
  };
}
