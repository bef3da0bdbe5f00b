/**
 * A unit driver: checks its settings, then observes, plans and applies in one go. Drivers for `kernel-modules`,
 * `sysctl`, `hugepages`, the package units (`nvidia-driver`, `fabric-manager`, `container-toolkit`), `mig-layout` and
 * `gpu-sharing` over their ports; a unit is called with `undefined` settings when the section does not list it, so it
 * undoes what bcd did before (and nothing else).
 *
 * @module
 */
import {
  type HugepageSettings,
  HugepageUnavailable,
  parseHugepageSettings,
  planHugepages,
  poolKey,
} from "./hugepages.ts";
import {
  type KernelModuleSettings,
  moduleKey,
  parseKernelModuleSettings,
  planKernelModules,
} from "./kernel_modules.ts";
import {
  driverRebootReason,
  type PackageSettings,
  packageSettingsParser,
  type PackageUnit,
  planPackage,
  UNIT_SERVICES,
} from "./packages.ts";
import type {
  HoldUsers,
  HugepagePort,
  KernelModulesPort,
  MigPort,
  PackagePort,
  SharingPort,
  SlotHolds,
  SysctlPort,
} from "./ports.ts";
import { GpuSharingRefused, type GpuSharingSettings, parseGpuSharingSettings, planGpuSharing } from "./gpu_sharing.ts";
import { MigLayoutRefused, type MigLayoutSettings, parseMigLayoutSettings, planMigLayout } from "./mig_layout.ts";
import {
  normalizeSysctlValue,
  parseSysctlSettings,
  planSysctl,
  sysctlKeysToRead,
  type SysctlSettings,
} from "./sysctl.ts";
import type { UnitName } from "./units.ts";

/** What one unit's pass came to. */
export interface UnitResult {
  /** Steps applied (0: the host already matched). */
  readonly steps: number;
  /** Set when the unit is not there yet and a later pass should try again (e.g. pages the kernel could not reserve). */
  readonly pending?: string;
  /** Set when the change takes effect only after a reboot; bcd never reboots by itself. */
  readonly rebootRequired?: string;
}

/** A unit failure. `terminal`: it fails the section at this generation; otherwise the next pass retries. */
export class HostUnitError extends Error {
  override name = "HostUnitError";
  constructor(readonly unit: UnitName, readonly terminal: boolean, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A unit the converger can run. */
export interface UnitDriver<S = unknown> {
  readonly name: UnitName;
  /** Checks the settings (throws `HostSettingsError` naming the unit and key). */
  parse(raw: Record<string, unknown>): S;
  /** Brings the host to `desired`, or undoes bcd's own changes when `undefined`. */
  converge(desired: S | undefined): Promise<UnitResult>;
}

/** The `sysctl` unit over its port. */
export function sysctlUnit(port: SysctlPort): UnitDriver<SysctlSettings> {
  return {
    name: "sysctl",
    parse: parseSysctlSettings,
    async converge(desired) {
      const observed = await port.read(sysctlKeysToRead(desired, []));
      const missing = Object.keys(desired?.values ?? {}).filter((k) => observed.live[k] == null);
      if (missing.length) {
        throw new HostUnitError("sysctl", true, `sysctl: this kernel has no key ${missing.join(", ")}`);
      }
      const steps = planSysctl(desired, observed);
      if (steps.length === 0) return { steps: 0 };
      const back = await port.apply(steps);
      for (const s of steps) {
        if (s.op !== "set") continue;
        const got = back[s.key];
        if (got == null || normalizeSysctlValue(got) !== s.value) {
          throw new HostUnitError(
            "sysctl",
            true,
            `sysctl: ${s.key} was written ${JSON.stringify(s.value)} but reads back ${JSON.stringify(got)}`,
          );
        }
      }
      return { steps: steps.length };
    },
  };
}

/** The `hugepages` unit over its port. */
export function hugepagesUnit(port: HugepagePort): UnitDriver<HugepageSettings> {
  return {
    name: "hugepages",
    parse: parseHugepageSettings,
    async converge(desired) {
      const observed = await port.read();
      let steps;
      try {
        steps = planHugepages(desired, observed);
      } catch (e) {
        if (e instanceof HugepageUnavailable) throw new HostUnitError("hugepages", true, e.message, { cause: e });
        throw e;
      }
      if (steps.length === 0) return { steps: 0 };
      const results = await port.apply(steps);
      // Fewer: the kernel could not reserve them; more: pages in use are never taken away.
      const short = results.filter((r) => r.total !== r.wanted)
        .map((r) => `${poolKey(r)}: ${r.total} pages, ${r.wanted} wanted`);
      return { steps: steps.length, ...(short.length ? { pending: `hugepages ${short.join("; ")}` } : {}) };
    },
  };
}

/** The `kernel-modules` unit over its port. */
export function kernelModulesUnit(port: KernelModulesPort): UnitDriver<KernelModuleSettings> {
  return {
    name: "kernel-modules",
    parse: parseKernelModuleSettings,
    async converge(desired) {
      const steps = planKernelModules(desired, await port.read());
      if (steps.length === 0) return { steps: 0 };
      const r = await port.apply(steps);
      const loaded = new Set(r.loaded.map(moduleKey));
      const missing = (desired?.modules ?? []).filter((m) => !loaded.has(m.name))
        .map((m) => `${m.name}${r.failures[m.name] ? ` (${r.failures[m.name]})` : ""}`);
      if (missing.length) {
        throw new HostUnitError("kernel-modules", true, `kernel-modules: not loaded: ${missing.join("; ")}`);
      }
      const stuck = steps.filter((s) => s.op === "drop" && s.unload && loaded.has(s.name))
        .map((s) => `${s.name}${r.failures[s.name] ? ` (${r.failures[s.name]})` : ""}`);
      // A module still in use cannot be unloaded: its record stays, and the next pass tries again.
      return {
        steps: steps.length,
        ...(stuck.length ? { pending: `kernel-modules: could not unload ${stuck.join("; ")}` } : {}),
      };
    },
  };
}

/** A package unit (`nvidia-driver`, `fabric-manager`, `container-toolkit`) over its port. */
export function packageUnit(unit: PackageUnit, port: PackagePort): UnitDriver<PackageSettings> {
  return {
    name: unit,
    parse: packageSettingsParser(unit),
    async converge(desired) {
      // A unit dropped from the section changes nothing (core/host/packages.ts says why).
      if (desired === undefined) return { steps: 0 };
      let observed = await port.read(unit, desired.package);
      const steps = planPackage(unit, desired, observed);
      if (steps.length > 0) {
        const r = await port.apply(unit, desired.package, steps);
        if (r.failure !== undefined) throw new HostUnitError(unit, true, `${unit}: ${r.failure}`);
        observed = r.observed;
        if (observed.installed !== desired.version) {
          throw new HostUnitError(
            unit,
            true,
            `${unit}: ${desired.package} reads ${
              observed.installed ?? "not installed"
            } after installing ${desired.version}`,
          );
        }
        const svc = UNIT_SERVICES[unit];
        if (svc !== undefined && !(observed.service?.enabled && observed.service.active)) {
          return { steps: steps.length, pending: `${unit}: ${svc} is not running after it was enabled and started` };
        }
      }
      const reboot = unit === "nvidia-driver" ? driverRebootReason(desired, observed) : undefined;
      return { steps: steps.length, ...(reboot !== undefined ? { rebootRequired: reboot } : {}) };
    },
  };
}

/**
 * The `mig-layout` unit over its port; `holds` says which MIG instances and GPUs bound holds use now (read each pass,
 * so an instance is never removed from under a hold bound since the last one).
 */
export function migLayoutUnit(port: MigPort, holds: HoldUsers): UnitDriver<MigLayoutSettings> {
  return {
    name: "mig-layout",
    parse: parseMigLayoutSettings,
    async converge(desired) {
      let steps;
      try {
        steps = planMigLayout(desired, await port.read(), await holds());
      } catch (e) {
        if (e instanceof MigLayoutRefused) throw new HostUnitError("mig-layout", true, e.message, { cause: e });
        throw e;
      }
      if (steps.length === 0) return { steps: 0 };
      const r = await port.apply(steps);
      if (r.failure !== undefined) throw new HostUnitError("mig-layout", true, `mig-layout: ${r.failure}`);
      const left = planMigLayout(desired, r.observed, new Map());
      if (left.length) {
        throw new HostUnitError("mig-layout", true, `mig-layout: the layout still differs after ${steps.length} steps`);
      }
      return { steps: steps.length };
    },
  };
}

/** The `gpu-sharing` unit over its port; `slotHolds` names the bound slot holds (read each pass). */
export function gpuSharingUnit(port: SharingPort, slotHolds: SlotHolds): UnitDriver<GpuSharingSettings> {
  return {
    name: "gpu-sharing",
    parse: parseGpuSharingSettings,
    async converge(desired) {
      let steps;
      try {
        steps = planGpuSharing(desired, await port.read(), await slotHolds());
      } catch (e) {
        if (e instanceof GpuSharingRefused) throw new HostUnitError("gpu-sharing", true, e.message, { cause: e });
        throw e;
      }
      if (steps.length === 0) return { steps: 0 };
      const r = await port.apply(steps);
      if (r.failure !== undefined) throw new HostUnitError("gpu-sharing", true, `gpu-sharing: ${r.failure}`);
      if (planGpuSharing(desired, r.observed, []).length) {
        throw new HostUnitError("gpu-sharing", true, `gpu-sharing: the host still differs after ${steps.length} steps`);
      }
      return { steps: steps.length };
    },
  };
}
