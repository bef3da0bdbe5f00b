/**
 * The hold's cgroup-v2 slice (000 §Device assignments, host resources): its name, where it sits
 * (`bcd.slice/bcd-alloc.slice/bcd-alloc-<allocation id>.slice`) and the settings its limits become.
 *
 * | Slice `bcd-alloc-<id>.slice`                     | From                                   |
 * | ------------------------------------------------ | -------------------------------------- |
 * | `AllowedCPUs`, `AllowedMemoryNodes`              | `cpus`, `mems`                         |
 * | `CPUQuota`                                       | `cpu_millis`, as whole percents of one CPU |
 * | `MemoryMax`, and `MemoryHigh` at 90% of it       | `memory_bytes`                         |
 * | `hugetlb.2MB.max`, `hugetlb.1GB.max` in cgroupfs | `hugepages_2mi`, `hugepages_1gi`       |
 *
 * Slice names nest by dashes in systemd (`a-b.slice` lives in `a.slice`), so a `-` inside the allocation id is
 * written the way systemd escapes it, `\x2d`, and the slice stays directly under `bcd-alloc.slice`. For ids without
 * a dash (the usual case) the name is exactly the seed's `bcd-alloc-<allocation id>.slice`.
 *
 * @module
 */
import { type AssignmentLimits, isValidCpuList, parseCpuList } from "./assignment.ts";

/** The parent slices, outermost first: `bcd.slice/bcd-alloc.slice`. */
export const SLICE_PARENTS: readonly string[] = ["bcd.slice", "bcd-alloc.slice"];

const _PREFIX = "bcd-alloc-";
const _SUFFIX = ".slice";

/** The slice unit name of a hold. */
export function sliceName(allocationId: string): string {
  const esc = allocationId.replace(/[^A-Za-z0-9:_.]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`);
  return `${_PREFIX}${esc}${_SUFFIX}`;
}

/** The allocation id a hold slice name belongs to, or `undefined` when the name is not a hold slice. */
export function allocationIdOfSlice(name: string): string | undefined {
  if (!name.startsWith(_PREFIX) || !name.endsWith(_SUFFIX)) return undefined;
  const esc = name.slice(_PREFIX.length, -_SUFFIX.length);
  if (!esc || !/^(?:[A-Za-z0-9:_.]|\\x[0-9a-f]{2})+$/.test(esc)) return undefined;
  return esc.replace(/\\x([0-9a-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** What a slice is set to. Every field is optional: only what the limits booked is set. */
export interface SliceSettings {
  readonly allowedCpus?: string;
  readonly allowedMemoryNodes?: string;
  /** Whole percents of one CPU (`CPUQuota=150%`). */
  readonly cpuQuotaPercent?: number;
  readonly memoryMaxBytes?: number;
  readonly memoryHighBytes?: number;
  /** Bytes of 2 MiB pages (`hugetlb.2MB.max`). */
  readonly hugetlb2MBMaxBytes?: number;
  /** Bytes of 1 GiB pages (`hugetlb.1GB.max`). */
  readonly hugetlb1GBMaxBytes?: number;
}

/** 2 MiB. */
export const PAGE_2MI = 2 * 1024 * 1024;
/** 1 GiB. */
export const PAGE_1GI = 1024 * 1024 * 1024;

/**
 * The slice settings of a hold's limits, row by row of the seed's table. `CPUQuota` rounds `cpu_millis / 10` up,
 * so a hold never gets less CPU than it booked; `MemoryHigh` is 90% of `MemoryMax`, rounded down to whole bytes.
 */
export function sliceSettings(limits: AssignmentLimits): SliceSettings {
  const s: { -readonly [K in keyof SliceSettings]: SliceSettings[K] } = {};
  if (limits.cpus) s.allowedCpus = limits.cpus;
  if (limits.mems) s.allowedMemoryNodes = limits.mems;
  if ((limits.cpu_millis ?? 0) > 0) s.cpuQuotaPercent = Math.ceil(limits.cpu_millis! / 10);
  if ((limits.memory_bytes ?? 0) > 0) {
    const m = limits.memory_bytes!;
    s.memoryMaxBytes = m;
    s.memoryHighBytes = Math.floor(m / 10) * 9 + Math.floor((m % 10) * 9 / 10);
  }
  if ((limits.hugepages_2mi ?? 0) > 0) s.hugetlb2MBMaxBytes = limits.hugepages_2mi! * PAGE_2MI;
  if ((limits.hugepages_1gi ?? 0) > 0) s.hugetlb1GBMaxBytes = limits.hugepages_1gi! * PAGE_1GI;
  return s;
}

/**
 * What the root helper's `slice.apply` accepts (000 §Device assignments, helper note): only a hold slice name
 * (`bcd-alloc-<allocation id>.slice`), cpulists for the cpusets, and whole non-negative numbers below 2^53 for the
 * rest; nothing else. Throws `RangeError` naming what it refuses.
 */
export function checkSliceRequest(name: unknown, settings: unknown): { name: string; settings: SliceSettings } {
  if (typeof name !== "string" || allocationIdOfSlice(name) === undefined) {
    throw new RangeError(`slice name ${JSON.stringify(name)} is not bcd-alloc-<allocation id>.slice`);
  }
  if (typeof settings !== "object" || settings === null || Array.isArray(settings)) {
    throw new RangeError("slice settings are not an object");
  }
  const out: Record<string, string | number> = {};
  const lists = ["allowedCpus", "allowedMemoryNodes"];
  const numbers = ["cpuQuotaPercent", "memoryMaxBytes", "memoryHighBytes", "hugetlb2MBMaxBytes", "hugetlb1GBMaxBytes"];
  for (const [k, v] of Object.entries(settings)) {
    if (v === undefined) continue;
    if (lists.includes(k)) {
      if (typeof v !== "string" || !isValidCpuList(v)) {
        throw new RangeError(`${k} ${JSON.stringify(v)} is not a cpulist`);
      }
    } else if (numbers.includes(k)) {
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
        throw new RangeError(`${k} ${String(v)} is not a count`);
      }
    } else {
      throw new RangeError(`slice setting ${JSON.stringify(k)} is not allowed`);
    }
    out[k] = v as string | number;
  }
  return { name, settings: out as SliceSettings };
}

/** What the host has, for {@link sliceHostProblem}: the root helper reads it from /proc and /sys. */
export interface SliceHostLimits {
  /** Logical CPUs: ids `0` to `cpus - 1` (`0`: unknown, the CPU checks are skipped). */
  readonly cpus: number;
  /** The NUMA node ids (`[0]` on a host without NUMA in sysfs). */
  readonly numaNodes: readonly number[];
  /** `undefined`: the host's memory could not be read; memory and huge pages are then not checked (as admission). */
  readonly memTotalBytes?: number;
  /**
   * Bytes of the 2 MiB and 1 GiB huge page pools. `0` or `undefined`: not checked here — a size the kernel lacks is
   * the slice manager's refusal (`PageSizeUnsupported`, terminal), and a limit on an empty pool reserves nothing.
   */
  readonly hugetlb2MBBytes?: number;
  readonly hugetlb1GBBytes?: number;
}

/** The smallest `MemoryMax` a slice may get: below it no workload starts (the kernel would take `memory.max=1`). */
export const MIN_SLICE_MEMORY_BYTES = 16 * 1024 * 1024;

/** The largest id a cpulist names, without expanding it. */
function _maxOfList(list: string): number {
  let max = -1;
  for (const part of list.split(",")) for (const n of part.split("-")) max = Math.max(max, Number(n));
  return max;
}

/**
 * Why `settings` do not fit this host, or `undefined` (the root helper's range check, issue 27 item 8): cpus only
 * of the host's CPUs, memory nodes only of its NUMA nodes, a CPU quota of 1% to 100% per CPU, `MemoryMax` from
 * {@link MIN_SLICE_MEMORY_BYTES} to `MemTotal`, `MemoryHigh` at most `MemoryMax` (or `MemTotal`), huge page limits
 * whole pages and at most the host's pool of that size.
 */
export function sliceHostProblem(s: SliceSettings, host: SliceHostLimits): string | undefined {
  if (s.allowedCpus !== undefined && host.cpus > 0 && _maxOfList(s.allowedCpus) >= host.cpus) {
    return `allowedCpus ${s.allowedCpus} names a CPU this host does not have (it has ${host.cpus}: 0-${host.cpus - 1})`;
  }
  if (s.allowedMemoryNodes !== undefined) {
    const max = _maxOfList(s.allowedMemoryNodes);
    const nodes = max <= Math.max(...host.numaNodes, 0) ? parseCpuList(s.allowedMemoryNodes) : [max];
    const missing = nodes.find((n) => !host.numaNodes.includes(n));
    if (missing !== undefined) {
      return `allowedMemoryNodes ${s.allowedMemoryNodes} names NUMA node ${missing}, which this host does not have (${
        host.numaNodes.join(",")
      })`;
    }
  }
  const maxQuota = host.cpus > 0 ? 100 * host.cpus : Number.MAX_SAFE_INTEGER;
  if (s.cpuQuotaPercent !== undefined && (s.cpuQuotaPercent < 1 || s.cpuQuotaPercent > maxQuota)) {
    return `cpuQuotaPercent ${s.cpuQuotaPercent} is not between 1 and ${maxQuota} (100 per CPU)`;
  }
  const total = host.memTotalBytes ?? Number.MAX_SAFE_INTEGER;
  if (s.memoryMaxBytes !== undefined && (s.memoryMaxBytes < MIN_SLICE_MEMORY_BYTES || s.memoryMaxBytes > total)) {
    return `memoryMaxBytes ${s.memoryMaxBytes} is not between ${MIN_SLICE_MEMORY_BYTES} and the host's MemTotal ${
      host.memTotalBytes ?? "(unread)"
    }`;
  }
  const highCap = s.memoryMaxBytes ?? total;
  if (s.memoryHighBytes !== undefined && s.memoryHighBytes > highCap) {
    return `memoryHighBytes ${s.memoryHighBytes} is above ${
      s.memoryMaxBytes !== undefined ? "memoryMaxBytes" : "MemTotal"
    } ${highCap}`;
  }
  for (
    const [k, page, pool] of [
      ["hugetlb2MBMaxBytes", PAGE_2MI, host.hugetlb2MBBytes],
      ["hugetlb1GBMaxBytes", PAGE_1GI, host.hugetlb1GBBytes],
    ] as const
  ) {
    const v = s[k];
    if (v === undefined) continue;
    if (v % page !== 0) return `${k} ${v} is not a whole number of ${page}-byte pages`;
    if (pool !== undefined && pool > 0 && v > pool) return `${k} ${v} is above the host's pool of ${pool} bytes`;
  }
  return undefined;
}
