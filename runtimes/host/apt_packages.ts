/**
 * The package units' host half, run by the root helper (`core/host/packages.ts`): the installed version from
 * `dpkg-query -W`, installs through `apt-get install -y PKG=VERSION` (non-interactive, keeping changed config files,
 * downgrades allowed: the section names one exact version), the unit's service through `systemctl` (`is-enabled`,
 * `is-active`, `enable --now`), and for `nvidia-driver` the driver the kernel runs from `nvidia-smi -q -x`.
 *
 * Every argv is built here from checked values: the package name (one of its unit's prefixes), the version (a Debian
 * version) and the service (named per unit in `UNIT_SERVICES`, never by the node). Each tool is a binary option so
 * tests run fake executables.
 *
 * @module
 */
import {
  isPackageVersion,
  isUnitPackage,
  type PackageApplied,
  type PackageObserved,
  type PackagePort,
  type PackageStep,
  type PackageUnit,
  UNIT_SERVICES,
} from "../../core/host/mod.ts";
import { GpuToolError } from "../../core/converge/devices/ports.ts";
import { NvidiaSmi } from "../nvidia/nvidia_smi.ts";

/** The most of a tool's output kept in a failure. */
const _MAX_MESSAGE = 600;

/** Options of {@link AptPackages}. */
export interface AptPackagesOptions {
  readonly dpkgQuery?: string;
  readonly aptGet?: string;
  readonly systemctl?: string;
  /** `nvidia-smi` (default on `PATH`). */
  readonly nvidiaSmi?: string;
  /** An install's timeout in ms (default 30 minutes: a driver build with DKMS is slow). */
  readonly installTimeoutMs?: number;
}

interface _Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `bin` with `args`; a program that is not installed is exit 127 with the reason. */
async function _run(bin: string, args: readonly string[], timeoutMs: number, env?: Record<string, string>) {
  try {
    const o = await new Deno.Command(bin, {
      args: [...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
      ...(env ? { env } : {}),
    }).output();
    const d = new TextDecoder();
    return { code: o.code, stdout: d.decode(o.stdout), stderr: d.decode(o.stderr) } satisfies _Run;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { code: 127, stdout: "", stderr: `${bin} is not installed` };
    throw e;
  }
}

function _words(r: _Run): string {
  const lines = `${r.stderr}\n${r.stdout}`.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  // apt-get says why last ("E: …"); keep the error lines when there are, else the tail.
  const errors = lines.filter((l) => /^E:|error|fatal/i.test(l));
  return ((errors.length ? errors : lines.slice(-3)).join("; ") || `exit ${r.code}`).slice(0, _MAX_MESSAGE);
}

/** The real package port. */
export class AptPackages implements PackagePort {
  readonly #o: AptPackagesOptions;
  constructor(opts: AptPackagesOptions = {}) {
    this.#o = opts;
  }

  async #installed(pkg: string): Promise<string | null> {
    const r = await _run(this.#o.dpkgQuery ?? "dpkg-query", ["-W", "-f=${Status}\\t${Version}\\n", pkg], 60_000);
    if (r.code !== 0) {
      if (/no packages found matching/i.test(r.stderr)) return null;
      throw new Error(`dpkg-query -W ${pkg} failed: ${_words(r)}`);
    }
    const [status, version] = (r.stdout.split("\n")[0] ?? "").split("\t");
    return status === "install ok installed" && isPackageVersion(version) ? version : null;
  }

  async #running(): Promise<string | null> {
    try {
      return (await new NvidiaSmi({ binary: this.#o.nvidiaSmi ?? "nvidia-smi" }).query()).driverVersion ?? null;
    } catch (e) {
      // No driver loaded (or nvidia-smi absent): none runs.
      if (e instanceof GpuToolError) return null; // NoGpuDriver is one too
      throw e;
    }
  }

  async #service(svc: string): Promise<{ enabled: boolean; active: boolean }> {
    const bin = this.#o.systemctl ?? "systemctl";
    const enabled = (await _run(bin, ["is-enabled", svc], 60_000)).code === 0;
    const active = (await _run(bin, ["is-active", svc], 60_000)).code === 0;
    return { enabled, active };
  }

  async read(unit: PackageUnit, pkg: string): Promise<PackageObserved> {
    if (!isUnitPackage(unit, pkg)) throw new RangeError(`${JSON.stringify(pkg)} is not a package of ${unit}`);
    const svc = UNIT_SERVICES[unit];
    return {
      installed: await this.#installed(pkg),
      ...(unit === "nvidia-driver" ? { running: await this.#running() } : {}),
      ...(svc !== undefined ? { service: await this.#service(svc) } : {}),
    };
  }

  async apply(unit: PackageUnit, pkg: string, steps: readonly PackageStep[]): Promise<PackageApplied> {
    for (const s of steps) {
      if (s.op === "install") {
        if (s.package !== pkg || !isUnitPackage(unit, pkg) || !isPackageVersion(s.version)) {
          throw new RangeError(`${unit}: install of ${JSON.stringify(s.package)}=${JSON.stringify(s.version)} refused`);
        }
        const r = await _run(
          this.#o.aptGet ?? "apt-get",
          [
            "install",
            "-y",
            "--no-install-recommends",
            "--allow-downgrades",
            "-o",
            "Dpkg::Options::=--force-confold",
            `${pkg}=${s.version}`,
          ],
          this.#o.installTimeoutMs ?? 30 * 60_000,
          { DEBIAN_FRONTEND: "noninteractive" },
        );
        if (r.code !== 0) {
          return { observed: await this.read(unit, pkg), failure: `apt-get install ${pkg}=${s.version}: ${_words(r)}` };
        }
        continue;
      }
      const svc = UNIT_SERVICES[unit];
      if (svc === undefined) throw new RangeError(`${unit} has no service`);
      const r = await _run(this.#o.systemctl ?? "systemctl", ["enable", "--now", svc], 120_000);
      if (r.code !== 0) {
        return { observed: await this.read(unit, pkg), failure: `systemctl enable --now ${svc}: ${_words(r)}` };
      }
    }
    return { observed: await this.read(unit, pkg) };
  }
}
