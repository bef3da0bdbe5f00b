/**
 * Host-side admission of instance starts (000 §Instances, 0dd122a). Before a runtime starts a domain that is not
 * running (a new one, a stopped one; a resume from `PAUSED` is not a start), bcd checks that the host can give it its
 * memory, counting what is committed, not what is used:
 *
 * - normal memory: `MemTotal` less the huge page pool (`Hugetlb`) and 1 GiB of headroom, against the memory plus VMM
 *   overhead (1/32 of the memory plus 256 MiB) of every running or paused domain bcd manages on normal pages, of the
 *   bound holds' memory limits, and of the starts admitted earlier in the same pass;
 * - huge pages, for an instance whose placement asks for them: free pages of that size on the placement's NUMA nodes
 *   and no more than the host-wide count (free less reserved), or free less reserved host-wide without nodes; its VMM
 *   overhead still counts against normal memory.
 *
 * A start that does not fit is not a failure: the instance stays stopped with the message
 * `ResourcesExhausted: … MiB of memory needed, … MiB left on this host` (or the huge pages needed and free), and the
 * start is tried again on the next pass.
 *
 * @module
 */
import { HOST_HEADROOM_BYTES, type HostMemory } from "../devices/admission.ts";
import type { HugePageSize } from "./domain_plan.ts";

const MiB = 1024 * 1024;

/** The VMM overhead of a domain of `memoryBytes`: 1/32 of it plus 256 MiB. */
export function vmmOverheadBytes(memoryBytes: number): number {
  return Math.ceil(memoryBytes / 32) + 256 * MiB;
}

/** What a domain takes from normal memory: all of it plus the overhead, or only the overhead on huge pages. */
export function normalCommitmentBytes(memoryBytes: number, hugepages: HugePageSize): number {
  return (hugepages === "none" ? memoryBytes : 0) + vmmOverheadBytes(memoryBytes);
}

/** A start to admit. */
export interface StartCandidate {
  readonly memoryBytes: number;
  readonly hugepages: HugePageSize;
  /** NUMA nodes of the placement (empty: host-wide). */
  readonly mems: readonly number[];
}

/** The outcome: admitted, or the `ResourcesExhausted` message. */
export type StartAdmission = { readonly ok: true; readonly bytes: number } | {
  readonly ok: false;
  readonly message: string;
};

/**
 * Admits `c` against `host` given `committedBytes` of normal memory (running and paused domains, bound holds, starts
 * admitted earlier in the pass). On success `bytes` is what the caller adds to its running total.
 */
export function admitStart(c: StartCandidate, host: HostMemory, committedBytes: number): StartAdmission {
  const need = normalCommitmentBytes(c.memoryBytes, c.hugepages);
  const left = host.memTotalBytes - host.hugetlbBytes - HOST_HEADROOM_BYTES - committedBytes;
  if (need > left) {
    return {
      ok: false,
      message: `ResourcesExhausted: ${Math.ceil(need / MiB)} MiB of memory needed, ${
        Math.max(0, Math.floor(left / MiB))
      } MiB left on this host`,
    };
  }
  if (c.hugepages !== "none") {
    const pageBytes = c.hugepages === "2M" ? 2 * MiB : 1024 * MiB;
    const pool = c.hugepages === "2M" ? host.pages2Mi : host.pages1Gi;
    const pages = Math.ceil(c.memoryBytes / pageBytes);
    const hostFree = pool ? pool.free - pool.reserved : 0;
    const onNodes = pool && c.mems.length > 0 && pool.freeByNode
      ? Math.min(hostFree, c.mems.reduce((s, n) => s + (pool.freeByNode?.[n] ?? 0), 0))
      : hostFree;
    if (pages > onNodes) {
      return {
        ok: false,
        message: `ResourcesExhausted: ${pages} ${c.hugepages === "2M" ? "2 MiB" : "1 GiB"} huge pages needed, ${
          Math.max(0, onNodes)
        } free on this host`,
      };
    }
  }
  return { ok: true, bytes: need };
}
