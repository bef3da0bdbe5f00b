/**
 * The filesystem inside a grown root partition, grown by root (`deploy.image` with `grow_root`): after the partition
 * table was rewritten (`core/disks/grow_partition.ts`) and re-read, the partition is found by its number under the
 * disk's `/sys/block/<disk>/` entry (never a path from the agent), its superblock read, and an ext2/3/4 filesystem is
 * checked (`e2fsck -f -p`, which `resize2fs` insists on) and grown (`resize2fs`). Any other filesystem is left as it
 * is and said so (`resized: false`): xfs and btrfs grow only while mounted, which root does not do to a tenant's disk,
 * and cloud-init's `resize_rootfs` grows them at first boot. Ironic Python Agent leaves all of it to cloud-init;
 * growing ext4 here means an image without cloud-init boots with its whole disk too.
 *
 * @module
 */
import { listDir, readInt } from "../host/sysfs.ts";

/** What happened to the partition's filesystem. */
export interface FsGrowth {
  /** `ext` (2, 3 or 4), or `other` when the superblock is not one root grows. */
  readonly filesystem: "ext" | "other";
  readonly resized: boolean;
}

/** A filesystem check or resize that failed: `fs-resize-failed`, or `partition-missing` when the kernel lacks it. */
export class FsGrowError extends Error {
  override name = "FsGrowError";
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

/** Grows the filesystem on partition `partition` of whole disk `kernelName`. */
export type FsGrower = (kernelName: string, partition: number) => Promise<FsGrowth>;

/** The tools and roots it uses (tests: none differ; the loop disk's partitions are real). */
export interface FsGrowerOptions {
  readonly sys?: string;
  readonly dev?: string;
  readonly e2fsck?: string;
  readonly resize2fs?: string;
}

const _EXT_MAGIC = 0xef53;

/** The real {@link FsGrower}: e2fsck and resize2fs on an ext filesystem, nothing on any other. */
export function hostFsGrower(o: FsGrowerOptions = {}): FsGrower {
  const sys = o.sys ?? "/sys";
  const dev = o.dev ?? "/dev";
  return async (kernelName, partition) => {
    let part: string | undefined;
    for (const name of await listDir(`${sys}/block/${kernelName}`)) {
      if (name.startsWith(kernelName) && await readInt(`${sys}/block/${kernelName}/${name}/partition`) === partition) {
        part = name;
      }
    }
    if (part === undefined) {
      throw new FsGrowError("partition-missing", `${kernelName} has no partition ${partition} after the table re-read`);
    }
    const f = await Deno.open(`${dev}/${part}`, { read: true });
    const sb = new Uint8Array(2);
    try {
      await f.seek(1024 + 56, Deno.SeekMode.Start);
      if (await f.read(sb) !== 2) return { filesystem: "other", resized: false };
    } finally {
      f.close();
    }
    if ((sb[0]! | (sb[1]! << 8)) !== _EXT_MAGIC) return { filesystem: "other", resized: false };
    // e2fsck -p: 0 clean, 1 errors corrected; anything else is a filesystem root will not grow.
    const check = await _run(o.e2fsck ?? "/usr/sbin/e2fsck", ["-f", "-p", `${dev}/${part}`]);
    if (check.code > 1) throw new FsGrowError("fs-resize-failed", `e2fsck exited ${check.code}: ${check.words}`);
    const grow = await _run(o.resize2fs ?? "/usr/sbin/resize2fs", [`${dev}/${part}`]);
    if (grow.code !== 0) throw new FsGrowError("fs-resize-failed", `resize2fs exited ${grow.code}: ${grow.words}`);
    return { filesystem: "ext", resized: true };
  };
}

async function _run(cmd: string, args: string[]): Promise<{ code: number; words: string }> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const words = new TextDecoder().decode(out.stderr).trim() || new TextDecoder().decode(out.stdout).trim();
  return { code: out.code, words: words.slice(0, 512) };
}
