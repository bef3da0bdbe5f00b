/**
 * The helper's socket directory: its own, or the helper does not start. The directory is created by the helper
 * (mode 0750, the node's group) when absent. One that exists already is taken only when it is the helper's own: a real
 * directory (not a link), owned by the helper's user, writable by nobody else (no group or world write bit). Every
 * directory above it must be owned by the helper's user or root and, when world-writable, sticky (`/tmp`), so no
 * one else can rename the socket's directory away. Anything else is refused with {@link SocketDirRefused} naming the
 * directory and what is wrong, and nothing is changed: a shared `1777` directory is never turned into `0750`, and a
 * directory another user owns (who could swap the socket) is never adopted.
 *
 * @module
 */

/** The socket's directory is not the helper's own. */
export class SocketDirRefused extends Error {
  override name = "SocketDirRefused";
}

/** Options of {@link prepareSocketDir}. */
export interface SocketDirOptions {
  /** The directory's mode (default 0750). */
  readonly mode?: number;
  /** The directory's group (the node's); unchanged when absent. */
  readonly gid?: number;
  /** The helper's user id (default the process's). */
  readonly uid?: number;
}

function _parent(dir: string): string {
  const i = dir.lastIndexOf("/");
  return i <= 0 ? "/" : dir.slice(0, i);
}

async function _lstat(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.lstat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Why `st` at `path` cannot hold the socket's directory, or `undefined`. */
function _ancestorProblem(path: string, st: Deno.FileInfo, uid: number): string | undefined {
  if (st.isSymlink) return `${path} is a symbolic link`;
  if (!st.isDirectory) return `${path} is not a directory`;
  if (st.uid !== uid && st.uid !== 0) return `${path} is owned by uid ${st.uid}, not root or the helper`;
  const mode = st.mode ?? 0;
  if ((mode & 0o002) !== 0 && (mode & 0o1000) === 0) return `${path} is world-writable and not sticky`;
  return undefined;
}

/** Why `st` is not the helper's own socket directory, or `undefined`. */
function _ownProblem(path: string, st: Deno.FileInfo, uid: number): string | undefined {
  if (st.isSymlink) return `${path} is a symbolic link`;
  if (!st.isDirectory) return `${path} is not a directory`;
  if (st.uid !== uid) return `${path} is owned by uid ${st.uid}, not the helper's ${uid}`;
  const mode = st.mode ?? 0;
  if ((mode & 0o022) !== 0) {
    return `${path} has mode ${(mode & 0o7777).toString(8).padStart(4, "0")}: others could replace the socket`;
  }
  return undefined;
}

/**
 * Makes `dir` the helper's socket directory (see the module doc); throws {@link SocketDirRefused} when it is
 * not the helper's own, with nothing changed.
 */
export async function prepareSocketDir(dir: string, opts: SocketDirOptions = {}): Promise<void> {
  if (!dir.startsWith("/") || dir === "/") {
    throw new SocketDirRefused(`socket directory ${dir} is not a directory of its own`);
  }
  const uid = opts.uid ?? Deno.uid() ?? 0;
  const mode = opts.mode ?? 0o750;
  const parent = _parent(dir);
  await Deno.mkdir(parent, { recursive: true, mode: 0o755 });
  for (let p = parent;; p = _parent(p)) {
    const st = await Deno.lstat(p);
    const why = _ancestorProblem(p, st, uid);
    if (why !== undefined) throw new SocketDirRefused(`helper socket directory ${dir}: ${why}`);
    if (p === "/") break;
  }
  try {
    await Deno.mkdir(dir, { mode });
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  const st = await _lstat(dir);
  if (st === undefined) throw new SocketDirRefused(`helper socket directory ${dir} vanished while it was made`);
  const why = _ownProblem(dir, st, uid);
  if (why !== undefined) throw new SocketDirRefused(`helper socket directory is not the helper's own: ${why}`);
  await Deno.chmod(dir, mode);
  if (opts.gid !== undefined) await Deno.chown(dir, null, opts.gid);
}
