/**
 * The rebind disk's file on the host (000 §Identity rebind, steps 2 and 4), the same for every runtime: created new
 * with the runtime's mode (never through a link or over a file left behind: one there is deleted first, then the file
 * is created exclusively), its last 4 KiB read back for the answer, and at the end zeroed, synced and deleted, so the
 * secret never stays on the host. What differs between runtimes — how the hypervisor is given the file and how the
 * disk is hot-added and removed — comes in as {@link RebindFileHooks}.
 *
 * @module
 */
import type { RebindDisk } from "./disk.ts";
import { REBIND_ANSWER_BYTES, REBIND_ANSWER_OFFSET, REBIND_DISK_BYTES } from "./image.ts";

/** A runtime's part of one rebind try. */
export interface RebindFileHooks {
  /** Hot-adds the written file (after giving the hypervisor access to it, where that is the runtime's job). */
  attach(): Promise<void>;
  /** Hot-removes it; nothing to do when it is not attached. */
  detach(): Promise<void>;
  /** Takes the hypervisor's access back, before the file is zeroed and deleted (runs whether or not it attached). */
  release?(): Promise<void>;
}

/** A {@link RebindDisk} over the file `path`, created with `mode` (`0o600` or `0o660`). */
export function rebindFileDisk(path: string, mode: number, hooks: RebindFileHooks): RebindDisk {
  return {
    write: async (img) => {
      if (img.length !== REBIND_DISK_BYTES) {
        throw new RangeError(`the rebind image is ${img.length} bytes; it must be ${REBIND_DISK_BYTES}`);
      }
      await _removeIfThere(path);
      await Deno.writeFile(path, img, { createNew: true, mode });
      // The process umask may have taken bits of `mode` off the new file.
      await Deno.chmod(path, mode);
    },
    attach: () => hooks.attach(),
    answer: () => readAnswerBlock(path),
    detach: () => hooks.detach(),
    destroy: async () => {
      await hooks.release?.();
      await zeroAndDelete(path);
    },
  };
}

/** The last 4 KiB of the rebind file `path` (short when the file is). */
export async function readAnswerBlock(path: string): Promise<Uint8Array> {
  const f = await Deno.open(path, { read: true });
  try {
    await f.seek(REBIND_ANSWER_OFFSET, Deno.SeekMode.Start);
    const b = new Uint8Array(REBIND_ANSWER_BYTES);
    let n = 0;
    while (n < b.length) {
      const r = await f.read(b.subarray(n));
      if (r === null) break;
      n += r;
    }
    return b.subarray(0, n);
  } finally {
    f.close();
  }
}

/** Overwrites the rebind file with zeros, syncs it and deletes it; a file that is gone is nothing to do. */
export async function zeroAndDelete(path: string): Promise<void> {
  let f: Deno.FsFile;
  try {
    f = await Deno.open(path, { write: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  try {
    const zero = new Uint8Array(REBIND_DISK_BYTES);
    for (let off = 0; off < zero.length;) off += await f.write(zero.subarray(off));
    await f.sync();
  } finally {
    f.close();
  }
  await _removeIfThere(path);
}

async function _removeIfThere(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}
