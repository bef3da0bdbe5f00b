/**
 * Where `guest turns` learns its VM id: `--vm-id`, else `bcd.vm_id=<uuid>` on the kernel command line
 * (`/proc/cmdline`), else the file `/etc/bcd/vm-id` in the image. The id is not a secret. Deno 2 lets only
 * `--allow-all` read `/proc`, so under the guest role's own flags the command line is skipped: the init passes
 * `--vm-id "$(cat /proc/cmdline | ...)"` or the image carries the file.
 *
 * @module
 */

/** The kernel command line parameter. */
export const VM_ID_CMDLINE_KEY = "bcd.vm_id";
/** The file in the image. */
export const VM_ID_FILE = "/etc/bcd/vm-id";

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** The id could not be found, or what was found is not a UUID. */
export class VmIdError extends Error {
  override name = "VmIdError";
}

/** Where the id came from. */
export type VmIdSource = "flag" | "cmdline" | "file";

/** Reads a small text file, or `null` when it does not exist. */
export type ReadText = (path: string) => Promise<string | null>;

async function _readText(path: string): Promise<string | null> {
  try {
    const f = await Deno.open(path);
    try {
      const buf = new Uint8Array(4096);
      const n = await f.read(buf);
      return new TextDecoder().decode(buf.subarray(0, n ?? 0));
    } finally {
      f.close();
    }
  } catch (e) {
    // Deno 2 reserves /proc to --allow-all: under the guest role's own flags the command line is not readable,
    // which leaves --vm-id and the file.
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable) return null;
    throw e;
  }
}

function _check(v: string, source: VmIdSource): { vmId: string; source: VmIdSource } {
  if (!UUID_RE.test(v)) throw new VmIdError(`VM id from ${source} is not a UUID: "${v.slice(0, 64)}"`);
  return { vmId: v.toLowerCase(), source };
}

/** Resolves the VM id; throws {@link VmIdError} when none is found or it is not a UUID. */
export async function resolveVmId(
  flag: string | undefined,
  readText: ReadText = _readText,
): Promise<{ vmId: string; source: VmIdSource }> {
  if (flag !== undefined) return _check(flag, "flag");
  const cmdline = await readText("/proc/cmdline");
  if (cmdline !== null) {
    for (const word of cmdline.trim().split(/\s+/)) {
      if (word.startsWith(`${VM_ID_CMDLINE_KEY}=`)) return _check(word.slice(VM_ID_CMDLINE_KEY.length + 1), "cmdline");
    }
  }
  const file = await readText(VM_ID_FILE);
  if (file !== null && file.trim() !== "") return _check(file.trim(), "file");
  throw new VmIdError(`no VM id: pass --vm-id, boot with ${VM_ID_CMDLINE_KEY}=<uuid>, or write ${VM_ID_FILE}`);
}
