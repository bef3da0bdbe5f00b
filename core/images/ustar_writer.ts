/**
 * A minimal ustar writer: regular files only, names checked (a relative path of at most 100 bytes, no `..`). GNU tar
 * reads what it writes (tested with the real `tar` through `logs.collect`'s archive and the identity rebind disk).
 * Shared by `core/commands/kind_handlers/tar_gz.ts` and `core/rebind/image.ts`.
 *
 * @module
 */

/** One file of the archive. */
export interface TarEntry {
  /** A relative path of at most 100 bytes, no `..`, no leading `/`. */
  readonly name: string;
  readonly data: Uint8Array;
  /** Modification time, unix ms. */
  readonly mtimeMs: number;
}

const enc = new TextEncoder();

function _octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

function _header(e: TarEntry): Uint8Array {
  const name = enc.encode(e.name);
  if (name.length === 0 || name.length > 100 || e.name.startsWith("/") || e.name.split("/").includes("..")) {
    throw new RangeError(`tar entry name ${JSON.stringify(e.name)} is not a short relative path`);
  }
  const h = new Uint8Array(512);
  const put = (off: number, s: string | Uint8Array) => h.set(typeof s === "string" ? enc.encode(s) : s, off);
  put(0, name);
  put(100, _octal(0o644, 8));
  put(108, _octal(0, 8));
  put(116, _octal(0, 8));
  put(124, _octal(e.data.length, 12));
  put(136, _octal(Math.max(0, Math.floor(e.mtimeMs / 1000)), 12));
  put(148, "        ");
  put(156, "0");
  put(257, "ustar\0");
  put(263, "00");
  put(265, "root");
  put(297, "root");
  let sum = 0;
  for (const b of h) sum += b;
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  return h;
}

/** The uncompressed tar of `entries`. */
export function tar(entries: readonly TarEntry[]): Uint8Array {
  let size = 1024;
  for (const e of entries) size += 512 + Math.ceil(e.data.length / 512) * 512;
  const out = new Uint8Array(size);
  let off = 0;
  for (const e of entries) {
    out.set(_header(e), off);
    off += 512;
    out.set(e.data, off);
    off += Math.ceil(e.data.length / 512) * 512;
  }
  return out;
}
