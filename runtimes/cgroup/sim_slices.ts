/**
 * Slices for the sim role and for tests: the cgroupfs slice manager on a plain directory tree that plays the
 * kernel's part (every cgroup directory offers all controllers, a new slice gets `cgroup.events` "populated 0",
 * `rmdir` removes the interface files with the directory). {@link setSimPopulated} stands for a workload.
 *
 * @module
 */
import type { SliceManager, SliceRemoval } from "../../core/converge/devices/ports.ts";
import type { SliceSettings } from "../../core/converge/devices/slice.ts";
import { ancestorDirs, readCgroupFile, sliceDir } from "./cgroup_files.ts";
import { CgroupfsSliceManager } from "./cgroupfs.ts";

/** The controllers a simulated tree offers. */
export const SIM_CONTROLLERS = "cpuset cpu io memory hugetlb pids";

/** The simulated tree's `rmdir`: plain files stand for interface files; a child directory is a child cgroup. */
export async function simRmdir(dir: string): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) throw new Deno.errors.Busy(`${dir} has a child cgroup`);
  }
  await Deno.remove(dir, { recursive: true });
}

/** Creates the simulated root and the slice's ancestors with their interface files (idempotent). */
export async function ensureSimTree(root: string): Promise<void> {
  for (const d of ancestorDirs(root)) {
    await Deno.mkdir(d, { recursive: true });
    if ((await readCgroupFile(`${d}/cgroup.controllers`)) === undefined) {
      await Deno.writeTextFile(`${d}/cgroup.controllers`, SIM_CONTROLLERS);
      await Deno.writeTextFile(`${d}/cgroup.subtree_control`, "");
    }
  }
}

/** Marks a simulated slice as holding a workload, or not. */
export async function setSimPopulated(root: string, name: string, populated: boolean): Promise<void> {
  await Deno.writeTextFile(`${sliceDir(root, name)}/cgroup.events`, `populated ${populated ? 1 : 0}\nfrozen 0\n`);
}

/** The cgroupfs slice manager on a simulated tree at `root`. */
export class SimSliceManager implements SliceManager {
  readonly #inner: CgroupfsSliceManager;
  constructor(readonly root: string) {
    this.#inner = new CgroupfsSliceManager({ root, rmdir: simRmdir });
  }
  async apply(name: string, settings: SliceSettings): Promise<void> {
    await ensureSimTree(this.root);
    await this.#inner.apply(name, settings);
    if ((await readCgroupFile(`${sliceDir(this.root, name)}/cgroup.events`)) === undefined) {
      await setSimPopulated(this.root, name, false);
    }
  }
  list(): Promise<string[]> {
    return this.#inner.list();
  }
  remove(name: string): Promise<SliceRemoval> {
    return this.#inner.remove(name);
  }
  hugetlbUsage(name: string): Promise<{ bytes2MB: number; bytes1GB: number } | undefined> {
    return this.#inner.hugetlbUsage(name);
  }
}
