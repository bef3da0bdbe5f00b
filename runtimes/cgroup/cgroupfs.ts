/**
 * The slice manager for hosts without systemd: direct cgroupfs writes under a cgroup-v2 root (default
 * `/sys/fs/cgroup`). Each row of the seed's slice table becomes a file:
 *
 * | Setting                         | File            | Value                          |
 * | ------------------------------- | --------------- | ------------------------------ |
 * | `AllowedCPUs`                   | `cpuset.cpus`   | the cpulist                    |
 * | `AllowedMemoryNodes`            | `cpuset.mems`   | the node list                  |
 * | `CPUQuota` (percent P)          | `cpu.max`       | `P*1000 100000`                |
 * | `MemoryMax`, `MemoryHigh`       | `memory.max`, `memory.high` | bytes              |
 * | huge pages                      | `hugetlb.2MB.max`, `hugetlb.1GB.max` | bytes     |
 *
 * The controllers a slice needs are enabled on its ancestors first; a controller the mount does not offer is an
 * error naming it. Every value is read back after it is written.
 *
 * @module
 */
import { PageSizeUnsupported, type SliceManager, type SliceRemoval } from "../../core/converge/devices/ports.ts";
import { allocationIdOfSlice, type SliceSettings } from "../../core/converge/devices/slice.ts";
import {
  ancestorDirs,
  CgroupError,
  enableControllers,
  hugetlbCurrent,
  isPopulated,
  kernelRmdir,
  listHoldSlices,
  type ReadBack,
  readCgroupFile,
  removeCgroupTree,
  type Rmdir,
  sliceDir,
  writeChecked,
} from "./cgroup_files.ts";

/** The CFS period bcd writes `cpu.max` with, in microseconds (systemd's default). */
export const CPU_PERIOD_US = 100_000;

/** One cgroupfs file a setting becomes. */
export interface SliceFile {
  readonly controller: string;
  readonly file: string;
  readonly value: string;
  readonly readBack: ReadBack;
}

/** The files `settings` become, in the order they are written (cpuset before the rest). */
export function sliceFiles(s: SliceSettings): SliceFile[] {
  const out: SliceFile[] = [];
  if (s.allowedCpus) out.push({ controller: "cpuset", file: "cpuset.cpus", value: s.allowedCpus, readBack: "cpulist" });
  if (s.allowedMemoryNodes) {
    out.push({ controller: "cpuset", file: "cpuset.mems", value: s.allowedMemoryNodes, readBack: "cpulist" });
  }
  if (s.cpuQuotaPercent) {
    out.push({
      controller: "cpu",
      file: "cpu.max",
      value: `${s.cpuQuotaPercent * CPU_PERIOD_US / 100} ${CPU_PERIOD_US}`,
      readBack: "exact",
    });
  }
  if (s.memoryMaxBytes) {
    out.push({ controller: "memory", file: "memory.max", value: `${s.memoryMaxBytes}`, readBack: "page" });
  }
  if (s.memoryHighBytes) {
    out.push({ controller: "memory", file: "memory.high", value: `${s.memoryHighBytes}`, readBack: "page" });
  }
  if (s.hugetlb2MBMaxBytes) {
    out.push({ controller: "hugetlb", file: "hugetlb.2MB.max", value: `${s.hugetlb2MBMaxBytes}`, readBack: "exact" });
  }
  if (s.hugetlb1GBMaxBytes) {
    out.push({ controller: "hugetlb", file: "hugetlb.1GB.max", value: `${s.hugetlb1GBMaxBytes}`, readBack: "exact" });
  }
  return out;
}

/**
 * Writes one slice file and reads it back. The kernel offers `hugetlb.<size>.*` only for the huge page sizes the host
 * has, and cgroupfs refuses to create a file (EACCES): a hugetlb file that is absent is reported as the missing page
 * size ({@link PageSizeUnsupported}, which no retry fixes), not as the raw write error.
 */
export async function writeSliceFile(dir: string, f: SliceFile): Promise<void> {
  const path = `${dir}/${f.file}`;
  try {
    await writeChecked(path, f.value, f.readBack);
  } catch (e) {
    if (!(e instanceof CgroupError) || f.controller !== "hugetlb" || (await readCgroupFile(path)) !== undefined) {
      throw e;
    }
    const size = /^hugetlb\.([^.]+)\.max$/.exec(f.file)?.[1] ?? f.file;
    throw new PageSizeUnsupported(`this host has no ${size} huge pages: the kernel offers no ${f.file} in ${dir}`, {
      cause: e,
    });
  }
}

/** Options of {@link CgroupfsSliceManager}. */
export interface CgroupfsOptions {
  /** The cgroup-v2 mount (default `/sys/fs/cgroup`). */
  readonly root?: string;
  /** How a cgroup directory is removed (the kernel's `rmdir`; a fake tree passes its own). */
  readonly rmdir?: Rmdir;
}

/** Hold slices as cgroupfs directories. */
export class CgroupfsSliceManager implements SliceManager {
  readonly root: string;
  readonly #rmdir: Rmdir;
  constructor(opts: CgroupfsOptions = {}) {
    this.root = opts.root ?? "/sys/fs/cgroup";
    this.#rmdir = opts.rmdir ?? kernelRmdir;
  }

  /** The slice's directory. */
  dir(name: string): string {
    if (allocationIdOfSlice(name) === undefined) throw new RangeError(`${JSON.stringify(name)} is not a hold slice`);
    return sliceDir(this.root, name);
  }

  async apply(name: string, settings: SliceSettings): Promise<void> {
    const dir = this.dir(name);
    const files = sliceFiles(settings);
    const controllers = [...new Set(files.map((f) => f.controller))];
    await enableControllers(ancestorDirs(this.root), controllers);
    await Deno.mkdir(dir, { recursive: true });
    for (const f of files) await writeSliceFile(dir, f);
  }

  list(): Promise<string[]> {
    return listHoldSlices(this.root);
  }

  async remove(name: string): Promise<SliceRemoval> {
    const dir = this.dir(name);
    try {
      if (await isPopulated(dir)) return "busy";
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return "absent";
      throw e;
    }
    return (await removeCgroupTree(dir, this.#rmdir)) ? "removed" : "busy";
  }

  async hugetlbUsage(name: string): Promise<{ bytes2MB: number; bytes1GB: number } | undefined> {
    const dir = this.dir(name);
    try {
      await Deno.stat(dir);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
    return await hugetlbCurrent(dir);
  }
}
