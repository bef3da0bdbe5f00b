/**
 * cgroup-v2 file operations both slice managers share: where a hold slice lives, enabling controllers down a
 * chain of ancestors, writing a value and reading it back, `cgroup.events`, and removing an empty cgroup with its
 * empty descendants.
 *
 * @module
 */
import { parseCpuList } from "../../core/converge/devices/assignment.ts";
import { allocationIdOfSlice, SLICE_PARENTS } from "../../core/converge/devices/slice.ts";

/** A cgroup operation the kernel refused or a value that did not stick. */
export class CgroupError extends Error {
  override name = "CgroupError";
}

/** The directory of a hold slice under a cgroup-v2 root: `<root>/bcd.slice/bcd-alloc.slice/<name>`. */
export function sliceDir(root: string, name: string): string {
  return [root, ...SLICE_PARENTS, name].join("/");
}

/** The directories from the root down to the slice's parent, outermost first. */
export function ancestorDirs(root: string): string[] {
  return SLICE_PARENTS.reduce((acc, p) => [...acc, `${acc[acc.length - 1]}/${p}`], [root]);
}

async function _read(path: string): Promise<string> {
  return (await Deno.readTextFile(path)).trim();
}

/** Reads a cgroup file, or `undefined` when it does not exist. */
export async function readCgroupFile(path: string): Promise<string | undefined> {
  try {
    return await _read(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/**
 * Makes each of `dirs` (outermost first; every one but the last is created when missing) pass `controllers` to its
 * children: the controller must be in its `cgroup.controllers`, then `+<controller>` goes to its
 * `cgroup.subtree_control`. The last directory's children get them too.
 */
export async function enableControllers(dirs: readonly string[], controllers: readonly string[]): Promise<void> {
  if (controllers.length === 0) return;
  for (const dir of dirs) {
    await Deno.mkdir(dir, { recursive: true });
    const available = ((await readCgroupFile(`${dir}/cgroup.controllers`)) ?? "").split(/\s+/);
    const enabled = ((await readCgroupFile(`${dir}/cgroup.subtree_control`)) ?? "").split(/\s+/);
    for (const c of controllers) {
      if (!available.includes(c)) throw new CgroupError(`controller ${c} is not available in ${dir}`);
      if (enabled.includes(c)) continue;
      try {
        await Deno.writeTextFile(`${dir}/cgroup.subtree_control`, `+${c}`);
      } catch (e) {
        throw new CgroupError(`cannot enable ${c} in ${dir}/cgroup.subtree_control: ${(e as Error).message}`, {
          cause: e,
        });
      }
    }
  }
}

/** How a value reads back: exactly, as a CPU list, or rounded down to a page (memory files). */
export type ReadBack = "exact" | "cpulist" | "page";

/** Writes `value` to `file` and checks that it reads back (the kernel may normalise cpulists and round to pages). */
export async function writeChecked(file: string, value: string, how: ReadBack = "exact"): Promise<void> {
  try {
    await Deno.writeTextFile(file, value);
  } catch (e) {
    throw new CgroupError(`cannot write ${JSON.stringify(value)} to ${file}: ${(e as Error).message}`, { cause: e });
  }
  const got = await _read(file);
  const ok = how === "cpulist"
    ? JSON.stringify(parseCpuList(got)) === JSON.stringify(parseCpuList(value))
    : how === "page"
    ? got === value || (/^\d+$/.test(got) && Number(got) === Math.floor(Number(value) / 4096) * 4096)
    : got === value;
  if (!ok) throw new CgroupError(`${file} reads ${JSON.stringify(got)} after writing ${JSON.stringify(value)}`);
}

/** `cgroup.events` of a cgroup: whether a process is in it or below it. */
export async function isPopulated(dir: string): Promise<boolean> {
  const text = await Deno.readTextFile(`${dir}/cgroup.events`);
  const m = /^populated\s+([01])$/m.exec(text);
  if (!m) throw new CgroupError(`${dir}/cgroup.events has no populated line`);
  return m[1] === "1";
}

/** Removes a cgroup directory (`rmdir`; the kernel removes its interface files). */
export type Rmdir = (dir: string) => Promise<void>;

/** The kernel's `rmdir`. */
export const kernelRmdir: Rmdir = (dir) => Deno.remove(dir);

/** Removes `dir` and its child cgroups, deepest first; `false` when the kernel says one is busy. */
export async function removeCgroupTree(dir: string, rmdir: Rmdir = kernelRmdir): Promise<boolean> {
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory && !(await removeCgroupTree(`${dir}/${e.name}`, rmdir))) return false;
  }
  try {
    await rmdir(dir);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.Busy) return false;
    if (e instanceof Deno.errors.NotFound) return true;
    throw e;
  }
}

/** The bytes of huge pages a cgroup has faulted in, per size (0 where the file is absent). */
export async function hugetlbCurrent(dir: string): Promise<{ bytes2MB: number; bytes1GB: number }> {
  const n = async (f: string) => Number((await readCgroupFile(`${dir}/${f}`)) ?? "0") || 0;
  const [bytes2MB, bytes1GB] = await Promise.all([n("hugetlb.2MB.current"), n("hugetlb.1GB.current")]);
  return { bytes2MB, bytes1GB };
}

/**
 * The hold slices (`bcd-alloc-<id>.slice`) under `bcd.slice/bcd-alloc.slice` of a cgroup root, sorted. The directory
 * is read synchronously: a kernel directory, read every convergence pass, where an async read
 * is a round trip through the runtime's blocking pool that costs the pass several times more.
 */
export function listHoldSlices(root: string): Promise<string[]> {
  const parent = ancestorDirs(root).at(-1)!;
  const out: string[] = [];
  try {
    for (const e of Deno.readDirSync(parent)) {
      if (e.isDirectory && allocationIdOfSlice(e.name) !== undefined) out.push(e.name);
    }
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return Promise.resolve([]);
    return Promise.reject(e);
  }
  return Promise.resolve(out.sort());
}
