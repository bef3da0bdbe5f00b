/**
 * The provisioning ramdisk's initramfs, as newc entries for our writer (`core/images/newc.ts`): a static busybox with
 * every applet it offers, the host programs root runs ({@link RAMDISK_TOOLS}: kexec-tools, util-linux's disk tools,
 * e2fsprogs, dosfstools, mtools, at the paths the helper calls them by) and the libraries they load, the kernel's disk and NIC modules with
 * their dependencies ({@link RAMDISK_MODULES}, loaded in `/lib/modules/load-order`), one Deno with its libraries, the
 * bundled `bcd-ramdisk` and `bcd-helper` (`make bundle`'s `dist/bcd-<role>/`, each with its launcher and a link to
 * the shared Deno), `/etc/bcd/config.toml` (`[helper] role = "ramdisk"`), the init and its shell parts, and, when the
 * site gives one, the CA the gateway's certificate chains to (`/etc/bcd/gateway-ca.pem`, trusted through `DENO_CERT`
 * by the join, the session and root's image downloads). Uncompressed: under TCG, and on virtual media served by a
 * BMC, gunzip of ~100 MB costs more than reading it.
 *
 * @module
 */
import type { NewcEntry } from "../../core/images/newc.ts";
import { type ResolvedModules, resolveModules } from "./kernel_modules.ts";
import { sharedLibraries } from "./shared_libraries.ts";

/**
 * The modules a ramdisk wants: virtio (PCI transport, disk, SCSI, NIC), SCSI disks, NVMe, AHCI, Intel, Mellanox and
 * Broadcom NICs, the LSI/Broadcom SAS HBAs, and FAT (a deployed image's boot partition, where `boot.kexec` reads the
 * kernel). Which of them a kernel builds in or lacks is in the build's summary.
 */
export const RAMDISK_MODULES: readonly string[] = [
  "virtio_pci",
  "virtio_blk",
  "virtio_scsi",
  "virtio_net",
  "sd_mod",
  "nvme",
  "ahci",
  "e1000",
  "e1000e",
  "igb",
  "ixgbe",
  "i40e",
  "ice",
  "mlx5_core",
  "bnxt_en",
  "megaraid_sas",
  "mpt3sas",
  "af_packet",
  "vfat",
  "nls_cp437",
  "nls_ascii",
  "nls_utf8",
  "nls_iso8859_1",
];

/**
 * The host programs root runs in the ramdisk, at the absolute paths its code runs them by (Debian's), each copied from
 * the same path here: `runtimes/disks/block_wipe_device.ts` (util-linux's `blkdiscard`, `blockdev`, `partx`),
 * `kexec_loads.ts` (`kexec`, `mount`, `umount`, `blkid`), `grow_fs.ts` (e2fsprogs' `e2fsck`, `resize2fs`) and
 * `config_drive.ts` (dosfstools' `mkfs.vfat`, mtools' `mcopy`). A path that is a link here (`mkfs.vfat` → `mkfs.fat`,
 * `mcopy` → `mtools`, which looks at the name it is run by) stays a link to the same file in the ramdisk.
 */
export const RAMDISK_TOOLS: readonly string[] = [
  "/usr/sbin/kexec",
  "/usr/sbin/blkdiscard",
  "/usr/sbin/blockdev",
  "/usr/bin/partx",
  "/usr/bin/mount",
  "/usr/bin/umount",
  "/usr/sbin/blkid",
  "/usr/sbin/e2fsck",
  "/usr/sbin/resize2fs",
  "/usr/sbin/mkfs.vfat",
  "/usr/bin/mcopy",
];

/** The shell parts of the init, beside this module: archive path → file here. */
const _SHELL: Readonly<Record<string, string>> = {
  "init": "init.sh",
  "etc/bcd/cmdline.sh": "cmdline.sh",
  "etc/bcd/disk_links.sh": "disk_links.sh",
  "etc/bcd/udhcpc.sh": "udhcpc.sh",
};

/** What goes into the ramdisk. */
export interface RamdiskInputs {
  /** The kernel's `lib/modules/<version>` directory. */
  readonly modules: string;
  /** A static busybox (Debian `busybox-static`'s `/bin/busybox`). */
  readonly busybox: string;
  /** Host programs: path in the ramdisk → the file to copy (default: {@link RAMDISK_TOOLS}, each from its own path). */
  readonly tools?: Readonly<Record<string, string>>;
  /** `dist/bcd-ramdisk/` and `dist/bcd-helper/` (from `bundleRole`): launcher, bundled JS and the Deno they run. */
  readonly bundles: { readonly ramdisk: string; readonly helper: string };
  /** The PEM CA the gateway's (and the image origins') certificates chain to, when not a public one. */
  readonly gatewayCaPem?: string;
  /** Modules in place of {@link RAMDISK_MODULES}. */
  readonly wantModules?: readonly string[];
}

/** The entries and what the module resolution found. */
export interface RamdiskContents {
  readonly entries: NewcEntry[];
  readonly modules: ResolvedModules;
}

/** The ramdisk's `/etc/bcd/config.toml`, read by the helper and the agent. */
export function ramdiskConfig(withCa: boolean): string {
  return [
    "# The provisioning ramdisk (built by make ramdisk): bcd-helper serves bcd-ramdisk, both as root in the initramfs.",
    "[helper]",
    'role = "ramdisk"',
    ...(withCa ? ["[gateway]", 'ca_file = "/etc/bcd/gateway-ca.pem"'] : []),
    "",
  ].join("\n");
}

/** The applets a busybox binary offers (`busybox --list`). */
export async function busyboxApplets(busybox: string): Promise<string[]> {
  const out = await new Deno.Command(busybox, { args: ["--list"], stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${busybox} --list failed: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout).split("\n").filter((a) =>
    /^[A-Za-z0-9_.[-]+$/.test(a) && a !== "busybox"
  );
}

/** Collects entries, adding each parent directory once, and refuses a path given twice. */
class _Tree {
  readonly entries: NewcEntry[] = [];
  readonly #dirs = new Set<string>();
  readonly #paths = new Set<string>();
  has(path: string): boolean {
    return this.#paths.has(path);
  }
  dir(p: string): void {
    if (p === "") return;
    const parts = p.split("/");
    for (let i = 1; i <= parts.length; i++) {
      const d = parts.slice(0, i).join("/");
      if (!this.#dirs.has(d)) {
        this.#dirs.add(d);
        this.entries.push({ type: "dir", path: d, mode: 0o755 });
      }
    }
  }
  file(path: string, data: Uint8Array | string, mode: number): void {
    this.dir(path.split("/").slice(0, -1).join("/"));
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    this.#paths.add(path);
    this.entries.push({ type: "file", path, data: bytes, mode });
  }
  symlink(path: string, target: string): void {
    this.dir(path.split("/").slice(0, -1).join("/"));
    this.#paths.add(path);
    this.entries.push({ type: "symlink", path, target });
  }
}

async function _bundle(tree: _Tree, dir: string, role: string, deno: string[]): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.name === "deno") {
      deno.push(p);
      tree.symlink(`opt/bcd/bcd-${role}/deno`, "../deno");
    } else if (e.isFile) {
      const mode = (await Deno.stat(p)).mode ?? 0o644;
      tree.file(`opt/bcd/bcd-${role}/${e.name}`, await Deno.readFile(p), mode & 0o111 ? 0o755 : 0o644);
    } else {
      throw new TypeError(`${p}: a bundle of the ramdisk holds plain files only (this role bundles no native package)`);
    }
  }
}

/** Whether `b` is `a` (a hard link) or holds the same bytes. */
async function _sameFile(a: string, b: string, aBytes: Uint8Array): Promise<boolean> {
  const [sa, sb] = [await Deno.stat(a), await Deno.stat(b)];
  if (sa.dev === sb.dev && sa.ino !== null && sa.ino === sb.ino) return true;
  if (sa.size !== sb.size) return false;
  const bBytes = await Deno.readFile(b);
  return aBytes.every((x, i) => x === bBytes[i]);
}

/** Builds the entries of the ramdisk's initramfs. */
export async function ramdiskContents(inp: RamdiskInputs): Promise<RamdiskContents> {
  const t = new _Tree();
  for (const d of ["dev", "proc", "sys", "run", "tmp", "root", "bin", "sbin", "etc/bcd", "lib/modules"]) t.dir(d);
  t.file("bin/busybox", await Deno.readFile(inp.busybox), 0o755);
  for (const a of await busyboxApplets(inp.busybox)) t.symlink(`bin/${a}`, "busybox");
  const tools = inp.tools ?? Object.fromEntries(RAMDISK_TOOLS.map((p) => [p, p]));
  for (const [at, from] of Object.entries(tools)) {
    if (!at.startsWith("/") || at.includes("..")) throw new TypeError(`tool path ${at} must be absolute`);
    const real = await Deno.realPath(from);
    if (from === at && real !== at) {
      if (!t.has(real.slice(1))) t.file(real.slice(1), await Deno.readFile(real), 0o755);
      t.symlink(at.slice(1), real);
    } else {
      t.file(at.slice(1), await Deno.readFile(from), 0o755);
    }
  }
  const denos: string[] = [];
  await _bundle(t, inp.bundles.ramdisk, "ramdisk", denos);
  await _bundle(t, inp.bundles.helper, "helper", denos);
  const deno = denos[0];
  if (denos.length !== 2 || deno === undefined) throw new TypeError("each bundle must hold its deno");
  const denoBytes = await Deno.readFile(deno);
  if (!(await _sameFile(deno, denos[1]!, denoBytes))) {
    throw new TypeError(`${denos.join(" and ")} differ: the ramdisk carries one Deno for both`);
  }
  t.file("opt/bcd/deno", denoBytes, 0o755);
  const libs = new Set(await sharedLibraries(deno));
  for (const from of Object.values(tools)) for (const l of await sharedLibraries(from)) libs.add(l);
  for (const lib of [...libs].sort()) t.file(lib.slice(1), await Deno.readFile(await Deno.realPath(lib)), 0o755);
  const modules = await resolveModules(inp.modules, inp.wantModules ?? RAMDISK_MODULES);
  for (const m of modules.load) t.file(`lib/modules/${m.name}.ko`, await Deno.readFile(m.path), 0o644);
  t.file("lib/modules/load-order", modules.load.map((m) => m.name + "\n").join(""), 0o644);
  t.file("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644);
  t.file("etc/group", "root:x:0:\n", 0o644);
  t.file("etc/bcd/config.toml", ramdiskConfig(inp.gatewayCaPem !== undefined), 0o644);
  if (inp.gatewayCaPem !== undefined) t.file("etc/bcd/gateway-ca.pem", inp.gatewayCaPem, 0o644);
  for (const [path, name] of Object.entries(_SHELL)) {
    t.file(path, await Deno.readFile(new URL(`./${name}`, import.meta.url)), 0o755);
  }
  return { entries: t.entries, modules };
}

/**
 * One line per entry, in archive order: `d 0755 path`, `f 0644 SIZE path`, `l path -> target`. The build writes it
 * beside the archive (`initrd.contents`), and the tests read what went in from it.
 */
export function contentsListing(entries: readonly NewcEntry[]): string[] {
  const mode = (m: number | undefined) => (m ?? 0o777).toString(8).padStart(4, "0");
  return entries.map((e) =>
    e.type === "dir"
      ? `d ${mode(e.mode)} ${e.path}`
      : e.type === "file"
      ? `f ${mode(e.mode)} ${e.data.length} ${e.path}`
      : `l ${e.path} -> ${e.target}`
  );
}
