/**
 * The package units: `nvidia-driver`, `fabric-manager` and `container-toolkit`. Each holds one Debian package at one
 * exact version, installed through the package manager (`apt-get install PKG=VERSION`); `fabric-manager` also keeps
 * its service enabled and running (`systemctl enable --now nvidia-fabricmanager`).
 *
 * Settings: `{"version": "<Debian version>", "package"?: "<package>"}`. The version is the package's exact Debian
 * version (`550.90.07-1`, an epoch allowed: 1–64 of `[A-Za-z0-9.+~:-]`, starting with a digit), what `apt-get`
 * takes after `=` and `dpkg-query` prints. The package defaults to the unit's usual one and must carry one of the
 * unit's prefixes ({@link PACKAGE_PREFIXES}), so a unit never installs anything but its own kind of package.
 *
 * Choices the seed leaves open (its host-configuration page is not among the seeds), written down:
 * - The installed version is observed with `dpkg-query`; for `nvidia-driver` also the driver the kernel runs
 *   (`nvidia-smi`'s `driver_version`). A driver whose installed upstream version (the Debian version without epoch
 *   and revision) is not the one running needs a reboot: the unit reports `RebootRequired` (and the units that
 *   depend on the driver wait) until the host has rebooted into it; bcd never reboots by itself.
 * - A unit dropped from the section leaves the package and its service as they are: taking a GPU host's driver or
 *   Fabric Manager away is not "giving back" anything bcd can restore, so bcd only stops managing them.
 * - A version the package manager cannot install fails the unit terminally with apt-get's words.
 *
 * @module
 */
import { object, refuse } from "./schema.ts";
import type { UnitName } from "./units.ts";

/** The package units. */
export const PACKAGE_UNITS = ["nvidia-driver", "fabric-manager", "container-toolkit"] as const;
/** A package unit. */
export type PackageUnit = typeof PACKAGE_UNITS[number];

/** Whether `u` is a package unit. */
export function isPackageUnit(u: unknown): u is PackageUnit {
  return (PACKAGE_UNITS as readonly unknown[]).includes(u);
}

/** The package each unit installs when its settings name none. */
export const DEFAULT_PACKAGES: Readonly<Record<PackageUnit, string>> = {
  "nvidia-driver": "nvidia-driver",
  "fabric-manager": "nvidia-fabricmanager",
  "container-toolkit": "nvidia-container-toolkit",
};

/** The prefixes a unit's package must start with (Ubuntu's versioned names, NVIDIA's CUDA repository's names). */
export const PACKAGE_PREFIXES: Readonly<Record<PackageUnit, readonly string[]>> = {
  "nvidia-driver": ["nvidia-driver", "cuda-drivers"],
  "fabric-manager": ["nvidia-fabricmanager", "cuda-drivers-fabricmanager"],
  "container-toolkit": ["nvidia-container-toolkit"],
};

/** The service a unit keeps enabled and running, if any; the helper names it, never the node. */
export const UNIT_SERVICES: Readonly<Record<PackageUnit, string | undefined>> = {
  "nvidia-driver": undefined,
  "fabric-manager": "nvidia-fabricmanager",
  "container-toolkit": undefined,
};

const _PACKAGE = /^[a-z0-9][a-z0-9+.-]{1,63}$/;
const _VERSION = /^[0-9][A-Za-z0-9.+~:-]{0,63}$/;

/** Whether `p` is a package name `unit` may install. */
export function isUnitPackage(unit: PackageUnit, p: unknown): p is string {
  return typeof p === "string" && _PACKAGE.test(p) && PACKAGE_PREFIXES[unit].some((x) => p.startsWith(x));
}

/** Whether `v` is a Debian version bcd may pass to apt-get. */
export function isPackageVersion(v: unknown): v is string {
  return typeof v === "string" && _VERSION.test(v);
}

/** The upstream part of a Debian version: no epoch, no revision (`1:550.90.07-0ubuntu1` → `550.90.07`). */
export function upstreamVersion(v: string): string {
  const noEpoch = v.includes(":") ? v.slice(v.indexOf(":") + 1) : v;
  return noEpoch.includes("-") ? noEpoch.slice(0, noEpoch.lastIndexOf("-")) : noEpoch;
}

/** A package unit's checked settings. */
export interface PackageSettings {
  readonly package: string;
  readonly version: string;
}

/** The settings parser of `unit`. */
export function packageSettingsParser(unit: PackageUnit): (raw: Record<string, unknown>) => PackageSettings {
  return (raw) => {
    const s = object(unit as UnitName, "settings", raw, ["package", "version"], ["version"]);
    if (!isPackageVersion(s.version)) {
      refuse(unit, "settings.version", s.version, "is not a Debian package version (1-64 of A-Za-z0-9.+~:-)");
    }
    const pkg = s.package ?? DEFAULT_PACKAGES[unit];
    if (!isUnitPackage(unit, pkg)) {
      refuse(unit, "settings.package", pkg, `is not a package name starting ${PACKAGE_PREFIXES[unit].join(" or ")}`);
    }
    return { package: pkg, version: s.version };
  };
}

/** What the helper reports about one unit's package. */
export interface PackageObserved {
  /** The installed version (`dpkg-query`), `null` when it is not installed. */
  readonly installed: string | null;
  /** `nvidia-driver` only: the driver version the kernel runs (`nvidia-smi`), `null` when none answers. */
  readonly running?: string | null;
  /** The unit's service, when it has one. */
  readonly service?: { readonly enabled: boolean; readonly active: boolean };
}

/** A step: install the package at the version, or enable and start the unit's service. */
export type PackageStep =
  | { readonly op: "install"; readonly package: string; readonly version: string }
  | { readonly op: "service" };

/** The minimal steps from `observed` to `desired` (`undefined`: the unit is not in the section, so none). */
export function planPackage(
  unit: PackageUnit,
  desired: PackageSettings | undefined,
  observed: PackageObserved,
): PackageStep[] {
  if (desired === undefined) return [];
  const steps: PackageStep[] = [];
  if (observed.installed !== desired.version) {
    steps.push({ op: "install", package: desired.package, version: desired.version });
  }
  if (UNIT_SERVICES[unit] !== undefined && (!observed.service?.enabled || !observed.service?.active)) {
    steps.push({ op: "service" });
  }
  return steps;
}

/** Why `nvidia-driver` needs a reboot after `observed`, or `undefined` when the wanted driver runs. */
export function driverRebootReason(desired: PackageSettings, observed: PackageObserved): string | undefined {
  const want = upstreamVersion(desired.version);
  if (observed.running === want) return undefined;
  return `nvidia-driver: ${desired.package} ${desired.version} is installed and the kernel runs ` +
    `${observed.running === null || observed.running === undefined ? "no NVIDIA driver" : observed.running}; ` +
    `a reboot loads ${want}`;
}
