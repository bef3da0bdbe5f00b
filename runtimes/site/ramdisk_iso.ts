/**
 * The bootable ISO a lease offers for virtual-media boot (Ironic's virtual-media boot interface is the model): ISOLINUX
 * on an El Torito no-emulation boot record, loading the lease's kernel and ramdisk initramfs with the lease's command
 * line (which carries the machine's join token). Built with `genisoimage` (Debian `genisoimage`; `isolinux.bin` from
 * Debian `isolinux`, `ldlinux.c32` from `syslinux-common`), run by the agent itself into its own cache directory (no
 * host effect: the node builds its NoCloud seed ISO the same way).
 *
 * BIOS boot only: UEFI virtual media would need an EFI System Partition image (a later step).
 *
 * @module
 */

/** Where the bootloader files come from (Debian's paths by default). */
export interface IsolinuxFiles {
  readonly isolinuxBin: string;
  readonly ldlinuxC32: string;
}

/** Debian's `isolinux` and `syslinux-common` paths. */
export const DEBIAN_ISOLINUX: IsolinuxFiles = {
  isolinuxBin: "/usr/lib/ISOLINUX/isolinux.bin",
  ldlinuxC32: "/usr/lib/syslinux/modules/bios/ldlinux.c32",
};

/** The longest kernel command line put in an ISO. */
export const MAX_CMDLINE = 2048;

/** A command line ISOLINUX can carry: printable ASCII, one line, bounded. */
export function checkCmdline(cmdline: string): string | undefined {
  if (cmdline.length > MAX_CMDLINE) return `cmdline is ${cmdline.length} characters (at most ${MAX_CMDLINE})`;
  if (!/^[\x20-\x7e]*$/.test(cmdline)) return "cmdline holds a character outside printable ASCII (or a line break)";
  return undefined;
}

/** The ISO could not be built; `reason` is `iso-build-failed`. */
export class IsoBuildFailed extends Error {
  override name = "IsoBuildFailed";
  readonly reason = "iso-build-failed";
}

/**
 * Builds the ISO at `out` from the staged `kernel` and `initrd` files (moved into the ISO's tree under `stage`, a
 * fresh directory the caller removes).
 */
export async function buildRamdiskIso(o: {
  stage: string;
  kernel: string;
  initrd: string;
  cmdline: string;
  out: string;
  files?: IsolinuxFiles;
}): Promise<void> {
  const bad = checkCmdline(o.cmdline);
  if (bad) throw new RangeError(bad);
  const files = o.files ?? DEBIAN_ISOLINUX;
  const tree = `${o.stage}/tree`;
  await Deno.mkdir(`${tree}/isolinux`, { recursive: true });
  await Deno.mkdir(`${tree}/bcd`, { recursive: true });
  try {
    await Deno.copyFile(files.isolinuxBin, `${tree}/isolinux/isolinux.bin`);
    await Deno.copyFile(files.ldlinuxC32, `${tree}/isolinux/ldlinux.c32`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new IsoBuildFailed(
        `the bootloader is missing (${files.isolinuxBin}, ${files.ldlinuxC32}: install isolinux and syslinux-common)`,
        { cause: e },
      );
    }
    throw e;
  }
  await Deno.rename(o.kernel, `${tree}/bcd/vmlinuz`);
  await Deno.rename(o.initrd, `${tree}/bcd/initrd`);
  await Deno.writeTextFile(
    `${tree}/isolinux/isolinux.cfg`,
    [
      "DEFAULT bcd",
      "PROMPT 0",
      "TIMEOUT 0",
      "LABEL bcd",
      "  KERNEL /bcd/vmlinuz",
      "  INITRD /bcd/initrd",
      `  APPEND ${o.cmdline}`,
      "",
    ]
      .join("\n"),
  );
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("genisoimage", {
      args: [
        "-quiet",
        "-output",
        o.out,
        "-volid",
        "BCD_RAMDISK",
        "-rational-rock",
        "-joliet",
        "-eltorito-boot",
        "isolinux/isolinux.bin",
        "-eltorito-catalog",
        "isolinux/boot.cat",
        "-no-emul-boot",
        "-boot-load-size",
        "4",
        "-boot-info-table",
        tree,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new IsoBuildFailed("genisoimage is not installed", { cause: e });
    throw e;
  }
  if (!out.success) {
    throw new IsoBuildFailed(`genisoimage: ${new TextDecoder().decode(out.stderr).trim().slice(0, 500)}`);
  }
}
