/**
 * The provisioning ramdisk as an artifact (`make ramdisk`; issue 19): the initramfs the `ramdisk` role runs in, the
 * kernel beside it and a bootable ISO of both, built from Debian parts with our own newc writer.
 *
 * - {@link ramdiskContents} (`archive.ts`): what goes in — busybox, kexec and util-linux's disk tools, the disk and NIC modules with their
 *   dependencies (`kernel_modules.ts`, read from each module's `.modinfo`: an unpacked Debian kernel has no
 *   `modules.dep`), one Deno with its libraries (`shared_libraries.ts`), the `bcd-ramdisk` and `bcd-helper` bundles,
 *   the config and the init.
 * - The init (`init.sh`, with `cmdline.sh`, `disk_links.sh` and `udhcpc.sh`): mounts, modules, `/dev/disk/by-id`
 *   links as udev would make them, DHCP, then the helper, the join with the token from the kernel command line, and
 *   the agent, each restarted when it exits.
 * - {@link buildRamdisk} (`build.ts`): `vmlinuz` + `initrd` (for iPXE), `initrd.contents`, `bcd-ramdisk.iso` (for
 *   virtual media, through the site's ISO builder).
 *
 * Choices, with Ironic Python Agent's ramdisk (IPA) and Tinkerbell's HookOS as the models:
 * - The kernel command line carries the join (`bcd.join_token`, `bcd.join_url`, optional `bcd.gateway`,
 *   `bcd.log_level`), as IPA's `ipa-api-url` and Tinkerbell's `tink_worker_image`/`grpc_authority` do: the site's
 *   lease writes them per machine, so one built ramdisk serves every machine.
 * - The gateway's CA, when it is not a public one, is built in (`--gateway-ca`); it is trusted through `DENO_CERT`
 *   (Deno adds it to its built-in roots), by the join, the session and root's image downloads alike.
 * - No udev: the init makes the by-id links from sysfs (virtio serial, NVMe model/serial/wwid, SCSI wwid), since bcd
 *   names disks only by them; the links are refreshed every 3 s (a deploy's partitions appear as `-partN`).
 * - Uncompressed initramfs, all of busybox's applets, both processes as root (the separation is Deno's grant).
 *
 * @module
 */
export {
  busyboxApplets,
  contentsListing,
  RAMDISK_MODULES,
  RAMDISK_TOOLS,
  ramdiskConfig,
  ramdiskContents,
} from "./archive.ts";
export type { RamdiskContents, RamdiskInputs } from "./archive.ts";
export { buildRamdisk, DEFAULT_CMDLINE } from "./build.ts";
export type { RamdiskArtifacts, RamdiskBuildOptions } from "./build.ts";
export { DEFAULT_KERNEL_DIR, findKernel } from "./kernel.ts";
export type { TestKernel } from "./kernel.ts";
export { modinfoFields, moduleDepends, ModuleFormatError, moduleName, resolveModules } from "./kernel_modules.ts";
export type { ResolvedModules } from "./kernel_modules.ts";
export { LddFailed, parseLdd, sharedLibraries } from "./shared_libraries.ts";
