/**
 * The slice manager where systemd runs: the limits are runtime properties (`systemctl set-property --runtime`,
 * dropped by a reboot while the hold stays, so the converger re-creates a missing slice), the slice is started
 * with `systemctl start` and stopped with `systemctl stop` once `cgroup.events` says it is empty, after which
 * `systemctl revert` drops its runtime drop-ins. systemd has no huge page property, so bcd enables the `hugetlb`
 * controller on the slice's ancestors and writes `hugetlb.<size>.max` in cgroupfs itself.
 *
 * | Setting                        | Property                |
 * | ------------------------------ | ----------------------- |
 * | `cpus`                         | `AllowedCPUs=`          |
 * | `mems`                         | `AllowedMemoryNodes=`   |
 * | `cpu_millis`                   | `CPUQuota=<P>%`         |
 * | `memory_bytes`                 | `MemoryMax=`, `MemoryHigh=` (90%) |
 *
 * @module
 */
import type { SliceManager, SliceRemoval } from "../../core/converge/devices/ports.ts";
import { allocationIdOfSlice, type SliceSettings } from "../../core/converge/devices/slice.ts";
import type { CommandRunner } from "../nvidia/nvidia_smi.ts";
import { denoRunner } from "../nvidia/nvidia_smi.ts";
import {
  ancestorDirs,
  CgroupError,
  enableControllers,
  hugetlbCurrent,
  isPopulated,
  listHoldSlices,
  sliceDir,
} from "./cgroup_files.ts";
import { sliceFiles, writeSliceFile } from "./cgroupfs.ts";

/** The `systemctl set-property` assignments of `settings`, in the seed table's order. */
export function sliceProperties(s: SliceSettings): string[] {
  const p: string[] = [];
  if (s.allowedCpus) p.push(`AllowedCPUs=${s.allowedCpus}`);
  if (s.allowedMemoryNodes) p.push(`AllowedMemoryNodes=${s.allowedMemoryNodes}`);
  if (s.cpuQuotaPercent) p.push(`CPUQuota=${s.cpuQuotaPercent}%`);
  if (s.memoryMaxBytes) p.push(`MemoryMax=${s.memoryMaxBytes}`);
  if (s.memoryHighBytes) p.push(`MemoryHigh=${s.memoryHighBytes}`);
  return p;
}

/** Options of {@link SystemdSliceManager}. */
export interface SystemdOptions {
  /** The `systemctl` binary (default `systemctl`). */
  readonly systemctl?: string;
  /** The cgroup-v2 mount systemd manages (default `/sys/fs/cgroup`). */
  readonly cgroupRoot?: string;
  readonly timeoutMs?: number;
  readonly run?: CommandRunner;
}

/** Hold slices as systemd slice units. */
export class SystemdSliceManager implements SliceManager {
  readonly #bin: string;
  readonly root: string;
  readonly #timeout: number;
  readonly #run: CommandRunner;
  constructor(opts: SystemdOptions = {}) {
    this.#bin = opts.systemctl ?? "systemctl";
    this.root = opts.cgroupRoot ?? "/sys/fs/cgroup";
    this.#timeout = opts.timeoutMs ?? 60_000;
    this.#run = opts.run ?? denoRunner;
  }

  async #systemctl(...args: string[]): Promise<void> {
    const r = await this.#run(this.#bin, args, { timeoutMs: this.#timeout });
    if (r.code !== 0) {
      throw new CgroupError(
        `systemctl ${args.join(" ")} exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 500)}`,
      );
    }
  }

  #dir(name: string): string {
    if (allocationIdOfSlice(name) === undefined) throw new RangeError(`${JSON.stringify(name)} is not a hold slice`);
    return sliceDir(this.root, name);
  }

  async apply(name: string, settings: SliceSettings): Promise<void> {
    const dir = this.#dir(name);
    const props = sliceProperties(settings);
    if (props.length) await this.#systemctl("set-property", "--runtime", name, ...props);
    await this.#systemctl("start", name);
    const huge = sliceFiles(settings).filter((f) => f.controller === "hugetlb");
    if (huge.length > 0) {
      await enableControllers(ancestorDirs(this.root), ["hugetlb"]);
      for (const f of huge) await writeSliceFile(dir, f);
    }
  }

  list(): Promise<string[]> {
    return listHoldSlices(this.root);
  }

  async remove(name: string): Promise<SliceRemoval> {
    const dir = this.#dir(name);
    try {
      if (await isPopulated(dir)) return "busy";
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return "absent";
      throw e;
    }
    await this.#systemctl("stop", name);
    await this.#systemctl("revert", name);
    return "removed";
  }

  async hugetlbUsage(name: string): Promise<{ bytes2MB: number; bytes1GB: number } | undefined> {
    const dir = this.#dir(name);
    try {
      await Deno.stat(dir);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
    return await hugetlbCurrent(dir);
  }
}
