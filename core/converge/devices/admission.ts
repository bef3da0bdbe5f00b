/**
 * Host admission of holds (000 §Device assignments, 31555bf). A new hold whose limits carry a memory limit or huge
 * pages is admitted the way an instance start is: from `MemTotal` less the huge page pool and 1 GiB of headroom come
 * the running and paused domains' commitments and those of the holds already bound (their `MemoryMax`, and the huge
 * pages of their limits not yet faulted in, per NUMA node). A hold that does not fit fails `resources-exhausted`.
 * A Kubernetes hold's booked limits count too. A host whose memory cannot be read binds without the check.
 *
 * @module
 */
import { type AssignmentLimits, type DevicesSection, parseCpuList } from "./assignment.ts";
import { PAGE_1GI, PAGE_2MI } from "./slice.ts";

/** 1 GiB of headroom left to the host. */
export const HOST_HEADROOM_BYTES = 1024 * 1024 * 1024;

/** One huge page pool (one page size). */
export interface HugePagePool {
  readonly free: number;
  readonly reserved: number;
  /** Free pages per NUMA node, when the host has per-node pools. */
  readonly freeByNode?: Readonly<Record<number, number>>;
}

/** The host's memory as admission sees it. */
export interface HostMemory {
  readonly memTotalBytes: number;
  /** The huge page pool (`Hugetlb` of `/proc/meminfo`), all sizes. */
  readonly hugetlbBytes: number;
  readonly pages2Mi?: HugePagePool;
  readonly pages1Gi?: HugePagePool;
  /**
   * The huge page sizes the host has, in bytes (`/sys/kernel/mm/hugepages/hugepages-<kB>kB`); absent when unknown
   * (then no hold is refused for its page size here, and the slice write names the size if the kernel lacks it).
   */
  readonly hugePageSizes?: readonly number[];
}

/** A page size as people write it: `2 MiB`, `1 GiB`. */
export function pageSizeName(bytes: number): string {
  if (bytes % PAGE_1GI === 0) return `${bytes / PAGE_1GI} GiB`;
  return bytes % _MIB === 0 ? `${bytes / _MIB} MiB` : `${bytes / 1024} KiB`;
}

/**
 * Why the host cannot give `candidate` its huge pages at all: a page size it books (`hugepages_2mi`, `hugepages_1gi`)
 * that the host does not have. `undefined` when every size it books exists, or when the host's sizes are unknown.
 */
export function missingHugePageSize(candidate: AssignmentLimits | undefined, host: HostMemory): string | undefined {
  if (!candidate || host.hugePageSizes === undefined) return undefined;
  const booked: readonly (readonly [number, number])[] = [
    [candidate.hugepages_2mi ?? 0, PAGE_2MI],
    [candidate.hugepages_1gi ?? 0, PAGE_1GI],
  ];
  for (const [pages, size] of booked) {
    if (pages <= 0 || host.hugePageSizes.includes(size)) continue;
    const has = host.hugePageSizes.length ? `it has ${host.hugePageSizes.map(pageSizeName).join(", ")}` : "it has none";
    return `this host has no ${pageSizeName(size)} huge pages (${has}); the hold books ${pages} of them`;
  }
  return undefined;
}

/** What `/proc/meminfo` says about `MemTotal` and the huge page pool. Throws `RangeError` without `MemTotal`. */
export function parseMeminfo(text: string): Pick<HostMemory, "memTotalBytes" | "hugetlbBytes"> {
  const kb = new Map<string, number>();
  for (const line of text.split("\n").slice(0, 4096)) {
    const m = /^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+kB)?\s*$/.exec(line);
    if (m) kb.set(m[1]!, Number(m[2]));
  }
  const total = kb.get("MemTotal");
  if (total === undefined) throw new RangeError("meminfo has no MemTotal line");
  let hugetlb = kb.get("Hugetlb");
  if (hugetlb === undefined) hugetlb = (kb.get("HugePages_Total") ?? 0) * (kb.get("Hugepagesize") ?? 0);
  return { memTotalBytes: total * 1024, hugetlbBytes: hugetlb * 1024 };
}

/** A bound hold's commitment. */
export interface BoundCommitment {
  readonly allocationId: string;
  readonly limits: AssignmentLimits;
  /** Bytes of each page size its slice has faulted in already (none known: 0). */
  readonly faulted2MBBytes?: number;
  readonly faulted1GBBytes?: number;
}

/** The outcome of {@link admitHold}. */
export type Admission = { readonly ok: true } | { readonly ok: false; readonly message: string };

/** Whether a hold's limits need admission at all (a memory limit or huge pages). */
export function needsAdmission(limits: AssignmentLimits | undefined): boolean {
  return !!limits && ((limits.memory_bytes ?? 0) > 0 || (limits.hugepages_2mi ?? 0) > 0 ||
    (limits.hugepages_1gi ?? 0) > 0);
}

const _MIB = 1024 * 1024;

/**
 * Admits a candidate hold against the host: normal memory against `MemTotal − Hugetlb − 1 GiB` less what domains
 * (`domainCommittedBytes`) and bound holds committed; each huge page size against the free pages (on the hold's
 * `mems` nodes when it names them, and host-wide free less reserved) less the pages bound holds booked and have not
 * faulted in yet.
 */
export function admitHold(
  candidate: AssignmentLimits,
  host: HostMemory,
  bound: readonly BoundCommitment[],
  domainCommittedBytes = 0,
): Admission {
  const needMem = candidate.memory_bytes ?? 0;
  if (needMem > 0) {
    const committed = domainCommittedBytes + bound.reduce((a, b) => a + (b.limits.memory_bytes ?? 0), 0);
    const left = host.memTotalBytes - host.hugetlbBytes - HOST_HEADROOM_BYTES - committed;
    if (needMem > left) {
      return {
        ok: false,
        message: `${Math.ceil(needMem / _MIB)} MiB of memory needed, ${
          Math.max(0, Math.floor(left / _MIB))
        } MiB left on this host`,
      };
    }
  }
  const nodes = candidate.mems ? parseCpuList(candidate.mems) : undefined;
  for (const size of ["2MB", "1GB"] as const) {
    const need = (size === "2MB" ? candidate.hugepages_2mi : candidate.hugepages_1gi) ?? 0;
    if (need <= 0) continue;
    const pool = size === "2MB" ? host.pages2Mi : host.pages1Gi;
    const pageBytes = size === "2MB" ? PAGE_2MI : PAGE_1GI;
    const outstanding = (b: BoundCommitment) => {
      const pages = (size === "2MB" ? b.limits.hugepages_2mi : b.limits.hugepages_1gi) ?? 0;
      const faulted = Math.floor(((size === "2MB" ? b.faulted2MBBytes : b.faulted1GBBytes) ?? 0) / pageBytes);
      return Math.max(0, pages - faulted);
    };
    const hostFree = pool ? pool.free - pool.reserved : 0;
    const hostLeft = hostFree - bound.reduce((a, b) => a + outstanding(b), 0);
    let left = hostLeft;
    let where = "on this host";
    if (nodes && pool?.freeByNode) {
      const nodeFree = nodes.reduce((a, n) => a + (pool.freeByNode![n] ?? 0), 0);
      const sharing = bound.filter((b) => !b.limits.mems || parseCpuList(b.limits.mems).some((n) => nodes.includes(n)));
      left = Math.min(hostLeft, nodeFree - sharing.reduce((a, b) => a + outstanding(b), 0));
      where = `on NUMA nodes ${candidate.mems}`;
    }
    if (need > left) {
      return {
        ok: false,
        message: `${need} huge pages of ${size} needed, ${Math.max(0, left)} free ${where}`,
      };
    }
  }
  return { ok: true };
}

/**
 * The normal memory the bound holds committed, for VM starts to count in turn ("VMs and holds never take what the
 * other was promised"): the `memory_bytes` of every wanted assignment whose hold is bound (read back from the CDI
 * directory), Kubernetes holds included.
 */
export function boundHoldsCommittedBytes(desired: DevicesSection | undefined, heldIds: Iterable<string>): number {
  const held = new Set(heldIds);
  let sum = 0;
  const seen = new Set<string>();
  for (const a of desired?.assignments ?? []) {
    if (!held.has(a.allocation_id) || seen.has(a.allocation_id)) continue;
    seen.add(a.allocation_id);
    sum += a.limits?.memory_bytes ?? 0;
  }
  return sum;
}
