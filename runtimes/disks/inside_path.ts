/**
 * A path resolved inside a mounted filesystem as if that filesystem were `/`: `..` stops at its root, an absolute
 * symlink (`/boot/vmlinuz -> /boot/vmlinuz-6.1.0-28-amd64`) starts again at its root, and a relative one is followed
 * from where it sits, at most 16 links deep. So a deployed image's `/boot/vmlinuz` link can never lead root out of
 * the read-only mount to a file of the ramdisk itself.
 *
 * @module
 */

/** The host path of the regular file `path` names inside `root`, or `undefined` when there is none. */
export async function resolveInside(root: string, path: string): Promise<string | undefined> {
  const todo = path.split("/").filter((c) => c !== "" && c !== ".");
  const at: string[] = [];
  let hops = 0;
  while (todo.length > 0) {
    const c = todo.shift()!;
    if (c === "..") {
      at.pop();
      continue;
    }
    const here = `${root}/${[...at, c].join("/")}`;
    let st: Deno.FileInfo;
    try {
      st = await Deno.lstat(here);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return undefined;
      throw e;
    }
    if (st.isSymlink) {
      if (++hops > 16) return undefined;
      const target = await Deno.readLink(here);
      if (target.startsWith("/")) at.length = 0;
      todo.unshift(...target.split("/").filter((x) => x !== "" && x !== "."));
      continue;
    }
    if (todo.length > 0 && !st.isDirectory) return undefined;
    at.push(c);
  }
  const final = `${root}/${at.join("/")}`;
  const st = await Deno.lstat(final);
  return st.isFile ? final : undefined;
}
