/**
 * The `cloud-hypervisor` guest's memory use as the host sees it, the balloon loop's usage reading for that runtime
 * (000 §Memory ballooning: "its use comes from the runtime's usage reading"). cloud-hypervisor's virtio-balloon has
 * no statistics queue (only inflate, deflate and free page reporting), so unlike `libvirt-kvm`'s `domstats --balloon`
 * there is no figure from the guest's driver. What there is: the guest's RAM is the VMM's anonymous memory, and with
 * free page reporting on (bcd's balloon always asks for it) the pages the guest frees are reported and dropped by the
 * VMM, so the `anon` line of the VMM unit's `memory.stat` is what the guest holds of the host's memory, plus the VMM's
 * own few MiB. That is the reading; it can only over-count (freed pages not yet reported, smaller free fragments the
 * guest keeps, the VMM's overhead), so a floor built on it takes less from a guest, never more.
 *
 * No reading (no unit, no cgroup file, cgroup v1) is `null`, and the policy then counts the guest as using all its
 * memory: nothing is taken from it.
 *
 * Root reads the file (`ChHost.memory`; a node under `bcd helper` asks the helper's `ch.memory` with the instance id
 * only, since its permissions grant no `/sys`, and sends no path). The unit's cgroup is found by systemd's slice naming rule
 * ({@link sliceCgroupPath}): `bcd-instances.slice` lives at `bcd.slice/bcd-instances.slice`.
 *
 * @module
 */
import { INSTANCE_ID } from "../../core/converge/instances/domain_plan.ts";
import { INSTANCES_SLICE } from "./unit.ts";

/** The largest `memory.stat` read (a real one is about 1.5 KiB). */
export const MAX_MEMORY_STAT_BYTES = 64 * 1024;

/** A VMM's memory use. */
export interface VmmMemory {
  /** Bytes the VMM of instance `id` holds of the host's memory (its guest's RAM in use); `null` without a reading. */
  usedBytes(id: string): Promise<number | null>;
}

/**
 * The cgroup path of systemd slice `name` below the root, by systemd's rule (`systemd.slice(5)`): each dash opens a
 * level, so `a-b-c.slice` is `a.slice/a-b.slice/a-b-c.slice`.
 */
export function sliceCgroupPath(name: string): string {
  if (!/^[A-Za-z0-9_.]+(-[A-Za-z0-9_.]+)*\.slice$/.test(name)) {
    throw new RangeError(`${JSON.stringify(name)} is not a slice name`);
  }
  const parts = name.slice(0, -".slice".length).split("-");
  return parts.map((_, i) => `${parts.slice(0, i + 1).join("-")}.slice`).join("/");
}

/** The `anon` figure of a cgroup's `memory.stat` text; `undefined` when it has none. */
export function parseMemoryStatAnon(text: string): number | undefined {
  const m = /^anon (\d+)$/m.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** The reading from cgroupfs: `<root>/bcd.slice/bcd-instances.slice/bcd-ch-<id>.service/memory.stat`'s `anon`. */
export class CgroupVmmMemory implements VmmMemory {
  readonly root: string;
  constructor(opts: { readonly cgroupRoot?: string } = {}) {
    this.root = opts.cgroupRoot ?? "/sys/fs/cgroup";
  }

  /** The unit's `memory.stat`. */
  statFile(id: string): string {
    if (!INSTANCE_ID.test(id)) throw new TypeError(`instance id ${JSON.stringify(id)} is not valid`);
    return `${this.root}/${sliceCgroupPath(INSTANCES_SLICE)}/bcd-ch-${id}.service/memory.stat`;
  }

  async usedBytes(id: string): Promise<number | null> {
    let f: Deno.FsFile;
    try {
      f = await Deno.open(this.statFile(id));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
    try {
      const buf = new Uint8Array(MAX_MEMORY_STAT_BYTES);
      let n = 0;
      while (n < buf.length) {
        const got = await f.read(buf.subarray(n));
        if (got === null) break;
        n += got;
      }
      return parseMemoryStatAnon(new TextDecoder().decode(buf.subarray(0, n))) ?? null;
    } finally {
      f.close();
    }
  }
}
