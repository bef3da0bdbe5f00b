/**
 * Root's side of "which disk": a stable id from the inventory (a `/dev/disk/by-id` name, never a kernel name or a
 * path) resolved to a whole disk, then re-checked just before anything destructive runs. The agent never sends a
 * device path; the helper resolves and checks here, each time.
 *
 * Refusals, in the order checked, each a {@link DiskRefused} with its reason:
 *
 * | reason              | when                                                                                 |
 * | ------------------- | ------------------------------------------------------------------------------------ |
 * | `unknown-disk`      | no `/dev/disk/by-id/<id>`, or it does not lead to a block device                     |
 * | `not-a-whole-disk`  | it leads to a partition (or anything not in `/sys/block`)                            |
 * | `ramdisk-disk`      | the disk or one of its partitions holds the filesystem mounted at `/` (what the agent runs from) |
 * | `mounted`           | the disk or one of its partitions is mounted anywhere (`/proc/self/mountinfo`, by device number) |
 * | `in-use`            | the disk or a partition has holders (device-mapper, md, bcache: `/sys/block/…/holders`) |
 * | `swap`              | the disk or a partition is active swap (`/proc/swaps`)                               |
 *
 * Mounts are matched by device number (`major:minor`), not by name, so a mount made through any alias is seen.
 *
 * @module
 */
import { isDiskId } from "../../core/disks/disk_id.ts";
import { listDir, readAttr, realPath } from "../host/sysfs.ts";

/** Why a disk is refused (the table above). */
export type DiskRefusal = "unknown-disk" | "not-a-whole-disk" | "ramdisk-disk" | "mounted" | "in-use" | "swap";

/** A disk the helper will not touch, with the reason and the id asked for. */
export class DiskRefused extends Error {
  constructor(readonly reason: DiskRefusal, readonly diskId: string, message: string) {
    super(message);
    this.name = "DiskRefused";
  }
}

/** Where the guard reads from (tests point `dev` at a temp dir of by-id links). */
export interface DiskGuardRoots {
  readonly dev?: string;
  readonly sys?: string;
  readonly proc?: string;
}

/** A resolved, checked whole disk. */
export interface CheckedDisk {
  readonly diskId: string;
  /** The kernel's name (`sda`, `nvme0n1`, `loop3`), for the helper's own use only. */
  readonly kernelName: string;
  readonly devicePath: string;
}

/** Resolves stable ids to whole disks and checks they are free to destroy. */
export class DiskGuard {
  readonly #dev: string;
  readonly #sys: string;
  readonly #proc: string;

  constructor(roots: DiskGuardRoots = {}) {
    this.#dev = roots.dev ?? "/dev";
    this.#sys = roots.sys ?? "/sys";
    this.#proc = roots.proc ?? "/proc";
  }

  /** Resolves `diskId` and runs every check of the table; throws {@link DiskRefused}. */
  async check(diskId: string): Promise<CheckedDisk> {
    if (!isDiskId(diskId)) {
      throw new DiskRefused("unknown-disk", diskId, `disk id ${JSON.stringify(diskId)} is not a by-id name`);
    }
    const target = await realPath(`${this.#dev}/disk/by-id/${diskId}`);
    const kernelName = target?.split("/").at(-1);
    if (target === undefined || kernelName === undefined || !target.startsWith("/dev/")) {
      throw new DiskRefused("unknown-disk", diskId, `disk ${diskId}: no such disk in /dev/disk/by-id`);
    }
    const numbers = await this.#numbers(kernelName);
    if (numbers === undefined) {
      throw new DiskRefused("not-a-whole-disk", diskId, `disk ${diskId} is ${kernelName}, not a whole disk`);
    }
    const mounts = await this.#mounts();
    for (const m of mounts) {
      if (!numbers.all.has(m.dev)) continue;
      if (m.mountPoint === "/") {
        throw new DiskRefused(
          "ramdisk-disk",
          diskId,
          `disk ${diskId} (${kernelName}) holds /, where the agent runs from`,
        );
      }
    }
    const mounted = mounts.find((m) => numbers.all.has(m.dev));
    if (mounted !== undefined) {
      throw new DiskRefused("mounted", diskId, `disk ${diskId} (${kernelName}) is mounted at ${mounted.mountPoint}`);
    }
    for (const part of [kernelName, ...numbers.partitions]) {
      const dir = part === kernelName ? `${this.#sys}/block/${kernelName}` : `${this.#sys}/block/${kernelName}/${part}`;
      const holders = await listDir(`${dir}/holders`);
      if (holders.length > 0) {
        throw new DiskRefused("in-use", diskId, `disk ${diskId} (${part}) is held by ${holders.join(", ")}`);
      }
    }
    const swaps = await this.#swaps();
    for (const s of swaps) {
      if (numbers.all.has(s)) throw new DiskRefused("swap", diskId, `disk ${diskId} (${kernelName}) is active swap`);
    }
    return { diskId, kernelName, devicePath: `/dev/${kernelName}` };
  }

  /** The disk's and its partitions' device numbers; `undefined` when `name` is not in /sys/block. */
  async #numbers(name: string): Promise<{ all: Set<string>; partitions: string[] } | undefined> {
    const own = await readAttr(`${this.#sys}/block/${name}/dev`);
    if (own === undefined) return undefined;
    const all = new Set([own]);
    const partitions: string[] = [];
    for (const entry of await listDir(`${this.#sys}/block/${name}`)) {
      if (!entry.startsWith(name)) continue;
      const dev = await readAttr(`${this.#sys}/block/${name}/${entry}/dev`);
      if (dev === undefined) continue;
      all.add(dev);
      partitions.push(entry);
    }
    return { all, partitions };
  }

  async #mounts(): Promise<{ dev: string; mountPoint: string }[]> {
    const text = await Deno.readTextFile(`${this.#proc}/self/mountinfo`);
    const out = [];
    for (const line of text.split("\n")) {
      const f = line.split(" ");
      if (f.length < 5) continue;
      out.push({ dev: f[2]!, mountPoint: f[4]!.replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))) });
    }
    return out;
  }

  async #swaps(): Promise<string[]> {
    let text: string;
    try {
      text = await Deno.readTextFile(`${this.#proc}/swaps`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return [];
      throw e;
    }
    const out: string[] = [];
    for (const line of text.split("\n").slice(1)) {
      const path = line.split(/\s+/)[0];
      if (!path || !path.startsWith("/dev/")) continue; // a swap file lives on a mounted filesystem: seen as a mount
      try {
        const st = await Deno.stat(path);
        if (st.rdev !== null) out.push(deviceNumber(st.rdev));
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
    }
    return out;
  }
}

/** `major:minor` of a Linux `dev_t` as `stat` gives it (the kernel's `new_encode_dev` layout). */
export function deviceNumber(rdev: number): string {
  const major = (rdev >>> 8) & 0xfff;
  const minor = (rdev & 0xff) | ((rdev >>> 12) & 0xfff00);
  return `${major}:${minor}`;
}
