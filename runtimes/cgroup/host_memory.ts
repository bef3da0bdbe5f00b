/**
 * The host's memory for hold admission: `MemTotal` and the huge page pool from `/proc/meminfo`, and each huge page
 * size's free and reserved pages host-wide (`/sys/kernel/mm/hugepages/hugepages-<kB>kB/`) and per NUMA node
 * (`/sys/devices/system/node/node<N>/hugepages/…/free_hugepages`). Roots are configurable so tests run on trees.
 *
 * @module
 */
import { type HostMemory, type HugePagePool, parseMeminfo } from "../../core/converge/devices/admission.ts";
import type { HostMemorySource } from "../../core/converge/devices/ports.ts";
import { readCgroupFile } from "./cgroup_files.ts";

/** The most page-size directories read (kernels have a handful). */
const _MAX_PAGE_SIZES = 64;

/**
 * The huge page sizes the host has, in bytes, ascending: one `hugepages-<kB>kB` directory under
 * `<sys>/kernel/mm/hugepages` per size. A kernel without huge pages has no such directory: no sizes.
 */
export async function hugePageSizes(sys = "/sys"): Promise<number[]> {
  const out: number[] = [];
  try {
    for await (const e of Deno.readDir(`${sys}/kernel/mm/hugepages`)) {
      const m = /^hugepages-(\d{1,12})kB$/.exec(e.name);
      if (m) out.push(Number(m[1]) * 1024);
      if (out.length >= _MAX_PAGE_SIZES) break;
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out.sort((a, b) => a - b);
}

/** Options of {@link ProcHostMemory}. */
export interface ProcHostMemoryOptions {
  /** Default `/proc`. */
  readonly proc?: string;
  /** Default `/sys`. */
  readonly sys?: string;
}

const _MAX_MEMINFO = 64 * 1024;

/** Reads host memory from procfs and sysfs. */
export class ProcHostMemory implements HostMemorySource {
  readonly #proc: string;
  readonly #sys: string;
  constructor(opts: ProcHostMemoryOptions = {}) {
    this.#proc = opts.proc ?? "/proc";
    this.#sys = opts.sys ?? "/sys";
  }

  async read(): Promise<HostMemory> {
    const text = await Deno.readTextFile(`${this.#proc}/meminfo`);
    if (text.length > _MAX_MEMINFO) throw new RangeError(`meminfo exceeds ${_MAX_MEMINFO} characters`);
    const base = parseMeminfo(text);
    return {
      ...base,
      pages2Mi: await this.#pool("2048kB"),
      pages1Gi: await this.#pool("1048576kB"),
      hugePageSizes: await hugePageSizes(this.#sys),
    };
  }

  async #pool(size: string): Promise<HugePagePool | undefined> {
    const dir = `${this.#sys}/kernel/mm/hugepages/hugepages-${size}`;
    const free = await readCgroupFile(`${dir}/free_hugepages`);
    if (free === undefined) return undefined;
    const reserved = Number((await readCgroupFile(`${dir}/resv_hugepages`)) ?? "0") || 0;
    const freeByNode: Record<number, number> = {};
    try {
      for await (const e of Deno.readDir(`${this.#sys}/devices/system/node`)) {
        const m = /^node(\d{1,4})$/.exec(e.name);
        if (!m) continue;
        const f = await readCgroupFile(
          `${this.#sys}/devices/system/node/${e.name}/hugepages/hugepages-${size}/free_hugepages`,
        );
        if (f !== undefined) freeByNode[Number(m[1])] = Number(f) || 0;
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return {
      free: Number(free) || 0,
      reserved,
      ...(Object.keys(freeByNode).length ? { freeByNode } : {}),
    };
  }
}
