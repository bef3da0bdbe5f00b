/**
 * A newc (SVR4 "070701", no CRC) cpio writer for initramfs overlays (seed 002 §"The guest agent in place of NVX's
 * agents"): files, directories and symlinks with owners and modes, and the append of such an archive to an existing
 * initramfs at a 4-byte boundary after zero padding, leaving the original bytes untouched. Linux unpacks the
 * appended archive over the first; an uncompressed archive must start at a multiple of 4 bytes.
 *
 * Entries are written in the order given; parents are not added, so a caller lists every directory the base
 * initramfs lacks before what goes in it.
 *
 * @module
 */

/** One archive entry. Paths are relative (`sbin/init`), with no `.` or `..` component. */
export type NewcEntry =
  | { type: "file"; path: string; data: Uint8Array; mode: number; uid?: number; gid?: number; mtime?: number }
  | { type: "dir"; path: string; mode: number; uid?: number; gid?: number; mtime?: number }
  | { type: "symlink"; path: string; target: string; mode?: number; uid?: number; gid?: number; mtime?: number };

const _S_IFREG = 0o100000;
const _S_IFDIR = 0o040000;
const _S_IFLNK = 0o120000;
const _MAX_U32 = 0xffffffff;
const _enc = new TextEncoder();

function _u32(v: number, what: string): string {
  if (!Number.isInteger(v) || v < 0 || v > _MAX_U32) throw new RangeError(`newc ${what} ${v} does not fit 32 bits`);
  return v.toString(16).padStart(8, "0");
}

function _checkPath(p: string): void {
  if (
    p === "" || p.startsWith("/") || p.includes("\0") || p.split("/").some((c) => c === "" || c === "." || c === "..")
  ) {
    throw new RangeError(`newc path ${JSON.stringify(p)} must be relative, without empty, "." or ".." components`);
  }
}

function _pad4(n: number): number {
  return (4 - (n % 4)) % 4;
}

function _record(
  ino: number,
  mode: number,
  uid: number,
  gid: number,
  nlink: number,
  mtime: number,
  name: string,
  data: Uint8Array,
): Uint8Array[] {
  const nameBytes = _enc.encode(name + "\0");
  const header = "070701" + [
    _u32(ino, "inode"),
    _u32(mode, "mode"),
    _u32(uid, "uid"),
    _u32(gid, "gid"),
    _u32(nlink, "nlink"),
    _u32(mtime, "mtime"),
    _u32(data.length, "file size"),
    _u32(0, "devmajor"),
    _u32(0, "devminor"),
    _u32(0, "rdevmajor"),
    _u32(0, "rdevminor"),
    _u32(nameBytes.length, "name size"),
    _u32(0, "check"),
  ].join("");
  return [
    _enc.encode(header),
    nameBytes,
    new Uint8Array(_pad4(110 + nameBytes.length)),
    data,
    new Uint8Array(_pad4(data.length)),
  ];
}

function _concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Builds a newc archive of `entries` ending with the `TRAILER!!!` record; its length is a multiple of 4.
 * Permission bits come from `mode` (0–0o7777; a symlink defaults to 0777); owners default to 0.
 *
 * @example newcArchive([{ type: "dir", path: "sbin", mode: 0o755 }, { type: "symlink", path: "sbin/a", target: "b" }])
 */
export function newcArchive(entries: readonly NewcEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const seen = new Set<string>();
  let ino = 1;
  for (const e of entries) {
    _checkPath(e.path);
    if (seen.has(e.path)) throw new RangeError(`newc path ${JSON.stringify(e.path)} appears twice`);
    seen.add(e.path);
    const perm = e.mode ?? 0o777;
    if (!Number.isInteger(perm) || perm < 0 || perm > 0o7777) throw new RangeError(`newc mode ${perm} of ${e.path}`);
    const uid = e.uid ?? 0;
    const gid = e.gid ?? 0;
    const mtime = e.mtime ?? 0;
    if (e.type === "file") parts.push(..._record(ino++, _S_IFREG | perm, uid, gid, 1, mtime, e.path, e.data));
    else if (e.type === "dir") {
      parts.push(..._record(ino++, _S_IFDIR | perm, uid, gid, 2, mtime, e.path, new Uint8Array(0)));
    } else {
      if (e.target === "" || e.target.includes("\0")) throw new RangeError(`newc symlink ${e.path} has a bad target`);
      parts.push(..._record(ino++, _S_IFLNK | perm, uid, gid, 1, mtime, e.path, _enc.encode(e.target)));
    }
  }
  parts.push(..._record(0, 0, 0, 0, 1, 0, "TRAILER!!!", new Uint8Array(0)));
  return _concat(parts);
}

/** Zero bytes needed after `length` bytes to reach the next multiple of 4. */
export function alignmentPadding(length: number): number {
  return _pad4(length);
}

/** `initramfs`, unchanged, then zeros to a multiple of 4, then `archive`. */
export function appendArchive(initramfs: Uint8Array, archive: Uint8Array): Uint8Array {
  return _concat([initramfs, new Uint8Array(_pad4(initramfs.length)), archive]);
}

/**
 * Copies the initramfs at `src` to `dest` (created with `mode`, replaced through a temporary name and a rename)
 * and appends a newc archive of `entries` at the next 4-byte boundary. Returns the archive's offset in `dest`.
 */
export async function writeInitramfs(
  src: string,
  dest: string,
  entries: readonly NewcEntry[],
  mode = 0o644,
): Promise<number> {
  const archive = newcArchive(entries);
  const tmp = `${dest}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.copyFile(src, tmp);
    const f = await Deno.open(tmp, { write: true, append: true });
    let offset: number;
    try {
      const size = (await f.stat()).size;
      const pad = _pad4(size);
      offset = size + pad;
      const tail = _concat([new Uint8Array(pad), archive]);
      let done = 0;
      while (done < tail.length) done += await f.write(tail.subarray(done));
      await f.sync();
    } finally {
      f.close();
    }
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, dest);
    return offset;
  } catch (e) {
    await Deno.remove(tmp).catch((r) => {
      if (!(r instanceof Deno.errors.NotFound)) throw r;
    });
    throw e;
  }
}
