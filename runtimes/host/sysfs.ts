/**
 * Reading /proc and /sys without tripping on what a kernel does not expose: a missing file, a file root cannot read,
 * or a sysfs attribute that answers EINVAL (a link's speed while it is down) reads as absent.
 *
 * @module
 */

/** Whether an error means "this attribute is not there to read". */
export function isAbsent(e: unknown): boolean {
  if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) return true;
  const code = (e as { code?: unknown })?.code;
  return code === "EINVAL" || code === "ENODEV" || code === "ENXIO" || code === "EOPNOTSUPP" || code === "ENOTDIR";
}

/** The file's text, trimmed, or undefined when it is absent. */
export async function readAttr(path: string): Promise<string | undefined> {
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (e) {
    if (isAbsent(e)) return undefined;
    throw e;
  }
}

/** A numeric attribute, or undefined. */
export async function readInt(path: string): Promise<number | undefined> {
  const s = await readAttr(path);
  if (s === undefined || !/^-?\d+$/.test(s)) return undefined;
  return Number(s);
}

/** The entries of a directory, sorted; empty when it is absent. */
export async function listDir(path: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(path)) out.push(e.name);
  } catch (e) {
    if (isAbsent(e)) return [];
    throw e;
  }
  return out.sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
}

/** The resolved path, or undefined. */
export async function realPath(path: string): Promise<string | undefined> {
  try {
    return await Deno.realPath(path);
  } catch (e) {
    if (isAbsent(e)) return undefined;
    throw e;
  }
}

/** The last PCI address (`0000:18:00.0`) on a resolved sysfs device path, or "". */
export function pciBusIdOf(resolved: string | undefined): string {
  if (resolved === undefined) return "";
  const parts = resolved.split("/").filter((p) => /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i.test(p));
  return parts.at(-1) ?? "";
}
