/**
 * How QEMU's user reaches a domain's files (000 §The runtimes, `libvirt-kvm`: "QEMU reaches its files" and "Under bcd
 * helper"). libvirt runs QEMU as its own user (`libvirt-qemu` or `qemu`), while bcd's directories are 0700 and its
 * files 0600, the node's. Two schemes, one per deployment, chosen by `[helper] libvirt_dynamic_ownership`:
 *
 * | scheme    | libvirt's `qemu.conf`     | directories on the way       | disks, seed, volumes, rebind disk                 |
 * | --------- | ------------------------- | ---------------------------- | ------------------------------------------------- |
 * | `relabel` | `dynamic_ownership = 1`   | `o+x` (search, never read)   | relabelled by libvirt while the domain runs       |
 * | `group`   | `dynamic_ownership = 0`   | `g+x`, group the node's      | group the node's; 0660 (read-only ones 0640)      |
 *
 * Under `group` (the seed's deployment under bcd helper) QEMU's user is a member of the node's group: the directories
 * from the data dir down to the instance's, the images' and (with volumes) the volume store get group search, never
 * group read, so listing stays closed; the base image stays the image store's 0644. The files a domain opens are
 * opened to the group when it may use them (a start, a restore, a hot-plug) and closed again, 0600, once it stopped,
 * was destroyed or undefined, or a disk was detached (a volume another running domain has stays open).
 *
 * Root changes modes and groups only through a descriptor opened `O_NOFOLLOW` (a link the node put in a file's place
 * is never followed) and only of a plain file or directory the node owns (the owner of the data dir): anything else is
 * refused, never changed, so the helper never opens a file of root or of another user to QEMU.
 *
 * @module
 */
import { constants, type FileHandle, open } from "node:fs/promises";

/** The scheme: libvirt relabels (`relabel`), or QEMU's user is in the node's group (`group`; `gid` default: the data dir's group). */
export type QemuAccess = { readonly scheme: "relabel" } | { readonly scheme: "group"; readonly gid?: number };

/** The default of `LibvirtHostOptions.qemuAccess`: libvirt's own default, `dynamic_ownership = 1`. */
export const RELABEL: QemuAccess = { scheme: "relabel" };

/** A file a domain opens, and whether QEMU only reads it. */
export interface DomainFile {
  readonly path: string;
  readonly readOnly: boolean;
}

/** A file or directory root refuses to open to QEMU's user: a link, a device, or not the node's. */
export class AccessRefused extends Error {
  override readonly name = "AccessRefused";
  constructor(readonly path: string, message: string) {
    super(message);
  }
}

/** The node: the owner of the data dir. */
export interface NodeOwner {
  readonly uid: number;
  readonly gid: number;
}

/** The owner of `dataDir` (the node), read with `lstat`: a link in its place is refused. */
export async function nodeOwner(dataDir: string): Promise<NodeOwner> {
  const st = await Deno.lstat(dataDir);
  if (!st.isDirectory || st.uid === null || st.gid === null) {
    throw new AccessRefused(dataDir, `the data dir ${dataDir} is not a directory`);
  }
  return { uid: st.uid, gid: st.gid };
}

/** Opens `path` without following a link; `undefined` when it is missing. */
async function _open(path: string, dir: boolean): Promise<FileHandle | undefined> {
  const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (dir ? constants.O_DIRECTORY : 0);
  try {
    return await open(path, flags);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ENOENT") return undefined;
    if (code === "ELOOP" || code === "ENOTDIR") {
      throw new AccessRefused(path, `${path} is a link or not a ${dir ? "directory" : "file"}; not opened to QEMU`);
    }
    throw e;
  }
}

/**
 * Makes each existing directory of `dirs` searchable by QEMU's user: `o+x` under `relabel`; under `group` the node's
 * group and `g+x` (never `g+r`). A missing directory is passed over; one the node does not own is refused.
 */
export async function openDirs(
  dirs: readonly string[],
  access: QemuAccess,
  owner: NodeOwner,
): Promise<void> {
  for (const d of dirs) {
    const h = await _open(d, true);
    if (!h) continue;
    try {
      const st = await h.stat();
      const bit = access.scheme === "group" ? 0o010 : 0o001;
      if (access.scheme === "group") {
        if (st.uid !== owner.uid) {
          throw new AccessRefused(d, `${d} is not the node's (uid ${st.uid}, not ${owner.uid}); not opened to QEMU`);
        }
        const gid = access.gid ?? owner.gid;
        if (st.gid !== gid) await h.chown(-1, gid);
      }
      if ((st.mode & bit) === 0) await h.chmod((st.mode & 0o7777) | bit);
    } finally {
      await h.close();
    }
  }
}

/**
 * Under `group`, gives each file of `files` to the node's group, 0660 (0640 when QEMU only reads it); under `relabel`
 * nothing (libvirt relabels). A missing file is passed over (the checks before a start report it); a link, a device,
 * a hard-linked file or a file the node does not own is refused.
 */
export async function openFiles(files: readonly DomainFile[], access: QemuAccess, owner: NodeOwner): Promise<void> {
  if (access.scheme !== "group") return;
  const gid = access.gid ?? owner.gid;
  for (const f of files) {
    const h = await _open(f.path, false);
    if (!h) continue;
    try {
      const st = await h.stat();
      if (!st.isFile() || st.uid !== owner.uid || st.nlink !== 1) {
        throw new AccessRefused(
          f.path,
          `${f.path} is not a plain file of the node's with one link (uid ${st.uid}, ${st.nlink} links); not opened to QEMU`,
        );
      }
      if (st.gid !== gid) await h.chown(-1, gid);
      const mode = f.readOnly ? 0o640 : 0o660;
      if ((st.mode & 0o7777) !== mode) await h.chmod(mode);
    } finally {
      await h.close();
    }
  }
}

/**
 * Closes each file of `paths` again: mode 0600 and, when `to` is given, that owner (a file libvirt relabelled goes back
 * to the node). A missing file, a link or anything not a plain file is passed over, never followed. Returns the paths
 * closed.
 */
export async function closeFiles(paths: readonly string[], to?: NodeOwner): Promise<string[]> {
  const closed: string[] = [];
  for (const p of paths) {
    let h: FileHandle | undefined;
    try {
      h = await _open(p, false);
    } catch (e) {
      if (e instanceof AccessRefused) continue;
      throw e;
    }
    if (!h) continue;
    try {
      const st = await h.stat();
      if (!st.isFile()) continue;
      if (to && (st.uid !== to.uid || st.gid !== to.gid)) await h.chown(to.uid, to.gid);
      if ((st.mode & 0o7777) !== 0o600) await h.chmod(0o600);
      closed.push(p);
    } finally {
      await h.close();
    }
  }
  return closed;
}
