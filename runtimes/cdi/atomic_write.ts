/**
 * Atomic file replacement: write a temp file in the same directory, fsync it, rename it over the target, fsync the
 * directory. A reader sees the old file or the new one, never a part, and the new one survives a crash once this
 * returns.
 *
 * @module
 */

/** Writes `data` to `path` atomically with `mode`, creating the directory (0755) when it is missing. */
export async function atomicWrite(path: string, data: Uint8Array | string, mode = 0o644): Promise<void> {
  const slash = path.lastIndexOf("/");
  const dir = slash > 0 ? path.slice(0, slash) : ".";
  const base = path.slice(slash + 1);
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  const tmp = `${dir}/.${base}.tmp-${crypto.randomUUID()}`;
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const f = await Deno.open(tmp, { write: true, createNew: true, mode });
  try {
    let n = 0;
    while (n < bytes.length) n += await f.write(bytes.subarray(n));
    await Deno.chmod(tmp, mode); // the umask may have narrowed it
    await f.sync();
  } catch (e) {
    f.close();
    await _dropTemp(tmp);
    throw e;
  }
  f.close();
  try {
    await Deno.rename(tmp, path);
  } catch (e) {
    await _dropTemp(tmp);
    throw e;
  }
  await syncDir(dir);
}

/**
 * Removes the temp file of a write that failed, while that failure is on its way to the caller, who branches on it:
 * a temp file that cannot be removed either (EACCES, EIO) is left for the stale-temp sweep (`hold_store.ts`) rather
 * than replacing the write's own error.
 */
async function _dropTemp(tmp: string): Promise<void> {
  try {
    await Deno.remove(tmp);
  } catch {
    // deliberately ignored: see above
  }
}

/** Removes `path` if it exists and fsyncs its directory; true when there was a file. */
export async function removeDurably(path: string): Promise<boolean> {
  try {
    await Deno.remove(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
  const slash = path.lastIndexOf("/");
  await syncDir(slash > 0 ? path.slice(0, slash) : ".");
  return true;
}

/** fsyncs a directory so a rename or unlink in it is durable. */
export async function syncDir(dir: string): Promise<void> {
  const d = await Deno.open(dir, { read: true });
  try {
    await d.sync();
  } finally {
    d.close();
  }
}
