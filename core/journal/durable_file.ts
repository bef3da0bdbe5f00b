/**
 * Durable whole-file replacement: write a temp file beside the target, fsync it, rename it over the target, fsync
 * the directory. A crash leaves either the old file or the new one, never a torn one.
 *
 * @module
 */
import { dirname } from "../util/path.ts";

/** Fsyncs a directory so a rename or create in it is durable. */
export async function fsyncDir(dir: string): Promise<void> {
  using d = await Deno.open(dir, { read: true });
  await d.sync();
}

/** Replaces `path` with `bytes` durably, file mode `mode` (default 0600). */
export async function writeFileDurable(path: string, bytes: Uint8Array, mode = 0o600): Promise<void> {
  const tmp = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    {
      using f = await Deno.open(tmp, { write: true, createNew: true, mode });
      let off = 0;
      while (off < bytes.length) off += await f.write(bytes.subarray(off));
      await f.sync();
    }
    await Deno.chmod(tmp, mode);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
    throw e;
  }
  await fsyncDir(dirname(path));
}
