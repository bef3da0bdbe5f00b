/**
 * The bootable ISO a lease offers for virtual-media boot (Ironic's virtual-media boot interface is the model), for BIOS
 * and UEFI machines alike, loading the lease's kernel and ramdisk initramfs with the lease's command line (which carries
 * the machine's join token). Built with `genisoimage`, run by the agent itself into its own cache directory (no host
 * effect: the node builds its NoCloud seed ISO the same way).
 *
 * - BIOS: ISOLINUX on the El Torito no-emulation boot record (`isolinux.bin` from Debian `isolinux`, `ldlinux.c32`
 *   from `syslinux-common`), reading `/bcd/vmlinuz` and `/bcd/initrd` from the ISO9660 tree.
 * - UEFI: a second El Torito entry (platform EFI) pointing at a FAT image, `efi/efiboot.img`, made without root with
 *   `mkfs.fat -C` and mtools (`mmd`, `mcopy`; Debian `dosfstools`, `mtools`): systemd-boot as the removable-media path
 *   `\EFI\BOOT\BOOTX64.EFI` (Debian `systemd-boot-efi`), `loader/loader.conf` (`timeout 0`: no menu) and one entry,
 *   `loader/entries/bcd.conf`, with the kernel, the initrd and the command line; the kernel and initrd are copied into
 *   the FAT image because systemd-boot reads only the filesystem it was loaded from. Why systemd-boot: the Debian
 *   kernel is an EFI stub, but started bare as `BOOTX64.EFI` it gets no command line and no initrd; a `startup.nsh`
 *   needs the UEFI shell, which BMCs' firmware rarely has; GRUB would read the ISO9660 tree (a smaller FAT image) but
 *   needs `grub-mkstandalone` and more packages. Not Secure Boot: systemd-boot and the kernel are not signed by a key
 *   the firmware trusts (a Secure Boot machine needs shim and a signed loader, not built here).
 * - Size: the kernel and initrd are on the ISO twice (tree and FAT image). El Torito records a boot image's size in
 *   512-byte sectors in 16 bits, so a FAT image past 32 MiB cannot be described: genisoimage writes the count modulo
 *   65536. OVMF reads the FAT filesystem's own size (a 60 MiB image booted here under qemu); firmware that trusted
 *   the count would need GRUB reading the ISO9660 tree instead (not built). `test:site` boots the ISO under OVMF
 *   through sushy-tools, as it boots it by ISOLINUX.
 *
 * The interface for the ramdisk artifact (`make ramdisk`): {@link buildRamdiskIso} takes the paths of a kernel and an
 * initramfs and a command line; nothing else of the ramdisk is assumed.
 *
 * @module
 */

/** Where the bootloader files come from (Debian's paths by default). */
export interface IsolinuxFiles {
  readonly isolinuxBin: string;
  readonly ldlinuxC32: string;
  /** systemd-boot's EFI binary for x86-64. */
  readonly systemdBootEfi: string;
}

/** Debian's `isolinux`, `syslinux-common` and `systemd-boot-efi` paths. */
export const DEBIAN_ISOLINUX: IsolinuxFiles = {
  isolinuxBin: "/usr/lib/ISOLINUX/isolinux.bin",
  ldlinuxC32: "/usr/lib/syslinux/modules/bios/ldlinux.c32",
  systemdBootEfi: "/usr/lib/systemd/boot/efi/systemd-bootx64.efi",
};

/** The programs the ISO build runs (the site role's `--allow-run`). */
export const ISO_TOOLS = ["genisoimage", "mkfs.fat", "mmd", "mcopy"] as const;

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
  await _efiImage({
    img: `${tree}/efi/efiboot.img`,
    kernel: `${tree}/bcd/vmlinuz`,
    initrd: `${tree}/bcd/initrd`,
    cmdline: o.cmdline,
    loader: files.systemdBootEfi,
    stage: o.stage,
  });
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
  await _tool("genisoimage", [
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
    "-eltorito-alt-boot",
    "-efi-boot",
    "efi/efiboot.img",
    "-no-emul-boot",
    tree,
  ]);
}

/**
 * The UEFI boot image: a FAT filesystem sized for its files, holding systemd-boot as `\EFI\BOOT\BOOTX64.EFI`, a
 * loader.conf that boots the one entry at once, the entry, the kernel and the initrd.
 */
async function _efiImage(o: {
  img: string;
  kernel: string;
  initrd: string;
  cmdline: string;
  loader: string;
  stage: string;
}): Promise<void> {
  let bytes = 0;
  try {
    for (const f of [o.kernel, o.initrd, o.loader]) bytes += (await Deno.stat(f)).size;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new IsoBuildFailed(`systemd-boot is missing (${o.loader}: install systemd-boot-efi)`, { cause: e });
    }
    throw e;
  }
  // The files, 5% for the FAT tables and cluster slack, and 2 MiB of room.
  const kib = Math.ceil((bytes * 1.05) / 1024) + 2048;
  await Deno.mkdir(o.img.slice(0, o.img.lastIndexOf("/")), { recursive: true });
  await _tool("mkfs.fat", ["-C", "-n", "BCD_EFI", o.img, String(kib)]);
  await Deno.writeTextFile(`${o.stage}/loader.conf`, "default bcd.conf\ntimeout 0\n");
  await Deno.writeTextFile(
    `${o.stage}/bcd.conf`,
    ["title bcd ramdisk", "linux /bcd/vmlinuz", "initrd /bcd/initrd", `options ${o.cmdline}`, ""].join("\n"),
  );
  const img = ["-i", o.img];
  await _tool("mmd", [...img, "::/EFI", "::/EFI/BOOT", "::/loader", "::/loader/entries", "::/bcd"]);
  for (
    const [from, to] of [
      [o.loader, "::/EFI/BOOT/BOOTX64.EFI"],
      [`${o.stage}/loader.conf`, "::/loader/loader.conf"],
      [`${o.stage}/bcd.conf`, "::/loader/entries/bcd.conf"],
      [o.kernel, "::/bcd/vmlinuz"],
      [o.initrd, "::/bcd/initrd"],
    ]
  ) await _tool("mcopy", [...img, from!, to!]);
}

async function _tool(cmd: (typeof ISO_TOOLS)[number], args: string[]): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped", env: { MTOOLS_SKIP_CHECK: "1" } })
      .output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new IsoBuildFailed(`${cmd} is not installed (Debian genisoimage, dosfstools, mtools)`, { cause: e });
    }
    throw e;
  }
  if (!out.success) {
    throw new IsoBuildFailed(`${cmd}: ${new TextDecoder().decode(out.stderr).trim().slice(0, 500)}`);
  }
}
