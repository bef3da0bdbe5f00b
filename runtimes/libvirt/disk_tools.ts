/**
 * The node-side disk tools of the `libvirt-kvm` runtime: `qemu-img create -u` builds an instance's overlay without
 * opening its base (the base's virtual size is read from its header, never by a tool), `qemu-img resize -f qcow2`
 * grows a stopped disk, and the NoCloud seed ISO is built with `genisoimage`, else `xorriso` (volume `cidata`,
 * `user-data` and `meta-data` with the instance id as `instance-id` and `local-hostname`).
 *
 * @module
 */
import { formatChannelKey } from "../../core/turns/channel_key.ts";
import { parseQcow2Header, readQcow2Prefix } from "../../core/images/qcow2_header.ts";
import type { ImageFormat } from "../../core/images/qcow2_header.ts";

/** A tool that failed. */
export class DiskToolError extends Error {
  override name = "DiskToolError";
}

async function _run(cmd: string, args: string[], cwd?: string): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, cwd, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new DiskToolError(`${cmd} is not installed`, { cause: e });
    throw e;
  }
  if (!out.success) {
    const msg = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join("; ");
    throw new DiskToolError(`${cmd} ${args[0]}: ${msg || `exit ${out.code}`}`);
  }
}

/** The virtual size of a base image: a qcow2's from its header, a raw's from its length. */
export async function baseVirtualSize(path: string, format: "qcow2" | "raw"): Promise<number> {
  if (format === "raw") return (await Deno.stat(path)).size;
  return Number(parseQcow2Header(await readQcow2Prefix(path)).virtualSize);
}

/**
 * Creates `disk` (mode 0600) as a qcow2 overlay of `base` (never opened: `-u`) of `sizeBytes`, or a blank qcow2 of
 * `sizeBytes` when `base` is `null` (an iso install).
 */
export async function createOverlay(
  disk: string,
  base: { path: string; format: "qcow2" | "raw" } | null,
  sizeBytes: number,
): Promise<void> {
  const args = ["create", "-q", "-f", "qcow2"];
  if (base) args.push("-u", "-F", base.format, "-b", base.path);
  args.push(disk, String(sizeBytes));
  await _run("qemu-img", args);
  await Deno.chmod(disk, 0o600);
}

/**
 * Copies an instance's disk, read through its backing chain (checked by `checkOverlay` first), into a new flat qcow2
 * `dest` (mode 0600) naming no backing file: a snapshot's disk. `paused`: a paused QEMU holds the image's write lock
 * (it flushed everything when it paused), so the read shares it (`-U`).
 */
export async function flattenDisk(disk: string, dest: string, paused = false): Promise<void> {
  await _run("qemu-img", ["convert", "-q", ...(paused ? ["-U"] : []), "-f", "qcow2", "-O", "qcow2", disk, dest]);
  await Deno.chmod(dest, 0o600);
}

/** Grows a stopped instance's qcow2 disk to `sizeBytes`. */
export async function resizeDisk(disk: string, sizeBytes: number): Promise<void> {
  await _run("qemu-img", ["resize", "-q", "-f", "qcow2", disk, String(sizeBytes)]);
}

/** Whether `cmd` runs here. */
async function _has(cmd: string): Promise<boolean> {
  try {
    await new Deno.Command(cmd, { args: ["--version"], stdout: "null", stderr: "null", stdin: "null" }).output();
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** The NoCloud `meta-data` of an instance. */
export function nocloudMetaData(instanceId: string, hostname: string): string {
  return `instance-id: ${instanceId}\nlocal-hostname: ${hostname || instanceId}\n`;
}

/** The file on the seed ISO that carries the VM's channel key (64 hex digits; `guest/channel_key.ts`). */
export const SEED_CHANNEL_KEY_FILE = "bcd-channel-key";

/**
 * Builds the NoCloud seed ISO at `iso` (mode 0600) from the user data, in a scratch directory beside it; with a
 * `channelKey`, the VM's channel key goes on it too ({@link SEED_CHANNEL_KEY_FILE}): the seed ISO, not the kernel
 * command line, which every guest process can read (seed 001 §Secrets).
 */
export async function buildSeedIso(
  iso: string,
  instanceId: string,
  hostname: string,
  userData: Uint8Array,
  channelKey?: Uint8Array,
): Promise<void> {
  const dir = `${iso}.d`;
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  await Deno.mkdir(dir, { mode: 0o700 });
  try {
    await Deno.writeFile(`${dir}/user-data`, userData, { mode: 0o600 });
    await Deno.writeTextFile(`${dir}/meta-data`, nocloudMetaData(instanceId, hostname), { mode: 0o600 });
    const tmp = `${iso}.tmp`;
    const files = ["user-data", "meta-data"];
    if (channelKey !== undefined) {
      await Deno.writeTextFile(`${dir}/${SEED_CHANNEL_KEY_FILE}`, formatChannelKey(channelKey) + "\n", { mode: 0o600 });
      files.push(SEED_CHANNEL_KEY_FILE);
    }
    if (await _has("genisoimage")) {
      await _run("genisoimage", ["-quiet", "-output", tmp, "-volid", "cidata", "-joliet", "-rock", ...files], dir);
    } else {
      await _run("xorriso", [
        "-as",
        "mkisofs",
        "-quiet",
        "-output",
        tmp,
        "-volid",
        "cidata",
        "-joliet",
        "-rock",
        ...files,
      ], dir);
    }
    await Deno.chmod(tmp, 0o600);
    await Deno.rename(tmp, iso);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Image formats an overlay may sit on. */
export function overlayBase(format: ImageFormat): "qcow2" | "raw" | null {
  return format === "iso" ? null : format;
}
