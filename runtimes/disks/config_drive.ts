/**
 * The config drive `deploy.image` writes after the image (issue 19): cloud-init's NoCloud data source — a vfat
 * filesystem labelled `CIDATA` holding `meta-data`, `user-data` and, when given, `network-config` — made by root as a
 * 16 MiB image file in a private temp directory (`mkfs.vfat -C`, then `mcopy` of each file) and written into the
 * partition `core/disks/grow_partition.ts` added at the disk's end, through the same disk handle as the image.
 *
 * Choices: NoCloud rather than OpenStack's `config-2` (Ironic's model) because it needs no metadata service layout
 * (`openstack/latest/meta_data.json`) and every cloud-init reads it; vfat rather than iso9660 because mtools writes
 * vfat's long names without mounting anything, where an ISO needs Rock Ridge or Joliet for `meta-data` to keep its
 * name. A partition, not a second disk: the ramdisk deploys one disk.
 *
 * @module
 */

/** The files, as the command gave them. */
export interface ConfigDriveFiles {
  readonly metaData: string;
  readonly userData: Uint8Array;
  readonly networkConfig?: string;
}

/** The config drive's size: room for three 64 KiB files and FAT16's tables, 1 MiB aligned. */
export const CONFIG_DRIVE_BYTES = 16 * 1024 * 1024;

/** The tools, absolute. */
export interface ConfigDriveTools {
  readonly mkfsVfat?: string;
  readonly mcopy?: string;
}

/** A config drive building failed (`config-drive-failed`), with the tool's words. */
export class ConfigDriveError extends Error {
  override name = "ConfigDriveError";
  readonly reason = "config-drive-failed";
}

/** The vfat image of {@link CONFIG_DRIVE_BYTES} holding `files`. */
export async function buildConfigDrive(files: ConfigDriveFiles, tools: ConfigDriveTools = {}): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-cidata-" });
  try {
    await Deno.chmod(dir, 0o700);
    const img = `${dir}/cidata.img`;
    await _run(tools.mkfsVfat ?? "/usr/sbin/mkfs.vfat", ["-C", "-n", "CIDATA", img, String(CONFIG_DRIVE_BYTES / 1024)]);
    const put: [string, Uint8Array][] = [
      ["meta-data", new TextEncoder().encode(files.metaData)],
      ["user-data", files.userData],
    ];
    if (files.networkConfig) put.push(["network-config", new TextEncoder().encode(files.networkConfig)]);
    for (const [name, bytes] of put) {
      await Deno.writeFile(`${dir}/${name}`, bytes, { mode: 0o600 });
      await _run(tools.mcopy ?? "/usr/bin/mcopy", ["-i", img, `${dir}/${name}`, `::${name}`]);
    }
    const out = await Deno.readFile(img);
    if (out.length !== CONFIG_DRIVE_BYTES) {
      throw new ConfigDriveError(`mkfs.vfat made ${out.length} bytes, not ${CONFIG_DRIVE_BYTES}`);
    }
    return out;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function _run(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped", env: { MTOOLS_SKIP_CHECK: "1" } })
    .output();
  if (!out.success) {
    const words = new TextDecoder().decode(out.stderr).trim().slice(0, 512);
    throw new ConfigDriveError(`${cmd.split("/").at(-1)} exited ${out.code}: ${words}`);
  }
}
