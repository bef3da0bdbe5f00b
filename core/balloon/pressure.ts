/**
 * The host readings the ballooning policy runs on: `MemTotal` and `MemAvailable` of `/proc/meminfo` and PSI's
 * `some avg10` of `/proc/pressure/memory`, behind {@link MemoryPressureSource} (read by the root helper's
 * `host.memory_pressure` on a node, `runtimes/cgroup/memory_pressure.ts`; a fixed or scripted source in tests).
 *
 * A kernel without PSI (older than 4.20, or booted with `psi=0`) has no readable `/proc/pressure/memory`: the reading
 * is `null` and the policy never counts the host as stalled (it runs on `MemAvailable` alone). A `meminfo` without
 * `MemAvailable` (kernels older than 3.14) cannot be balloned against: {@link parseMemoryPressure} refuses it.
 *
 * @module
 */
import type { HostPressure } from "./policy.ts";

/** Where a pass's readings come from. */
export interface MemoryPressureSource {
  read(): Promise<HostPressure>;
}

/** The most of `/proc/meminfo` read (a few KiB on real kernels). */
export const MAX_MEMINFO_CHARS = 64 * 1024;
/** The most of `/proc/pressure/memory` read (two short lines). */
export const MAX_PSI_CHARS = 4096;

/**
 * `MemTotal` and `MemAvailable` of `meminfo` and `some avg10` of `psi` (`undefined`: the host has no PSI). Throws a
 * `RangeError` naming what is missing or malformed; bounds both texts before it splits them.
 */
export function parseMemoryPressure(meminfo: string, psi: string | undefined): HostPressure {
  if (meminfo.length > MAX_MEMINFO_CHARS) throw new RangeError(`meminfo exceeds ${MAX_MEMINFO_CHARS} characters`);
  const kb = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d{1,15})\\s+kB\\s*$`, "m").exec(meminfo);
    if (!m) throw new RangeError(`meminfo has no ${name} line`);
    return Number(m[1]) * 1024;
  };
  const memTotalBytes = kb("MemTotal");
  const memAvailableBytes = kb("MemAvailable");
  if (memTotalBytes <= 0) throw new RangeError("meminfo's MemTotal is 0");
  let someAvg10: number | null = null;
  if (psi !== undefined) {
    if (psi.length > MAX_PSI_CHARS) throw new RangeError(`pressure/memory exceeds ${MAX_PSI_CHARS} characters`);
    const m = /^some avg10=(\d{1,3}(?:\.\d{1,4})?) /m.exec(psi);
    if (!m) throw new RangeError(`pressure/memory has no "some avg10=" reading: ${JSON.stringify(psi.slice(0, 80))}`);
    someAvg10 = Number(m[1]);
    if (someAvg10 > 100) throw new RangeError(`pressure/memory's some avg10 is ${someAvg10}, above 100`);
  }
  return { memTotalBytes, memAvailableBytes, someAvg10 };
}
