/**
 * Writes the provisioning ramdisk's artifacts into one directory: `vmlinuz` and `initrd` (the pair an iPXE script
 * boots), `initrd.contents` (the archive's listing, {@link contentsListing}) and `bcd-ramdisk.iso` (ISOLINUX on El
 * Torito, for virtual media: the site's own ISO builder, `runtimes/site/ramdisk_iso.ts`, with the command line given
 * here). The initrd is written through a temporary name and renamed, so a failed build leaves the previous one.
 *
 * @module
 */
import { newcArchive } from "../../core/images/newc.ts";
import { buildRamdiskIso } from "../site/ramdisk_iso.ts";
import { contentsListing, ramdiskContents, type RamdiskInputs } from "./archive.ts";
import type { TestKernel } from "./kernel.ts";
import type { ResolvedModules } from "./kernel_modules.ts";

/** The console the ISO's command line names when the caller gives none (serial first: BMCs show it as SOL). */
export const DEFAULT_CMDLINE = "console=tty0 console=ttyS0,115200n8";

/** What {@link buildRamdisk} takes beyond the archive's inputs. */
export interface RamdiskBuildOptions extends Omit<RamdiskInputs, "modules"> {
  /** The output directory (created). */
  readonly out: string;
  readonly kernel: TestKernel;
  /** The ISO's kernel command line (the site's leases put the join token and URLs here); no ISO when `false`. */
  readonly isoCmdline?: string | false;
}

/** What was written. */
export interface RamdiskArtifacts {
  readonly vmlinuz: string;
  readonly initrd: string;
  readonly contents: string;
  readonly iso: string | undefined;
  readonly modules: ResolvedModules;
  /** Bytes of each artifact. */
  readonly sizes: { readonly vmlinuz: number; readonly initrd: number; readonly iso: number | undefined };
}

async function _writeAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  try {
    if (typeof data === "string") await Deno.writeTextFile(tmp, data);
    else await Deno.writeFile(tmp, data);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch((r) => {
      if (!(r instanceof Deno.errors.NotFound)) throw r;
    });
    throw e;
  }
}

/** Builds the ramdisk into `o.out`. */
export async function buildRamdisk(o: RamdiskBuildOptions): Promise<RamdiskArtifacts> {
  await Deno.mkdir(o.out, { recursive: true });
  const { entries, modules } = await ramdiskContents({ ...o, modules: o.kernel.modules });
  const archive = newcArchive(entries);
  const initrd = `${o.out}/initrd`;
  const vmlinuz = `${o.out}/vmlinuz`;
  const contents = `${o.out}/initrd.contents`;
  await _writeAtomic(initrd, archive);
  await _writeAtomic(contents, contentsListing(entries).join("\n") + "\n");
  await _writeAtomic(vmlinuz, await Deno.readFile(o.kernel.vmlinuz));
  let iso: string | undefined;
  if (o.isoCmdline !== false) {
    const stage = await Deno.makeTempDir({ dir: o.out, prefix: ".iso-" });
    try {
      await Deno.copyFile(vmlinuz, `${stage}/vmlinuz`);
      await Deno.copyFile(initrd, `${stage}/initrd`);
      iso = `${o.out}/bcd-ramdisk.iso`;
      await buildRamdiskIso({
        stage,
        kernel: `${stage}/vmlinuz`,
        initrd: `${stage}/initrd`,
        cmdline: o.isoCmdline ?? DEFAULT_CMDLINE,
        out: `${stage}/out.iso`,
      });
      await Deno.rename(`${stage}/out.iso`, iso);
    } finally {
      await Deno.remove(stage, { recursive: true });
    }
  }
  return {
    vmlinuz,
    initrd,
    contents,
    iso,
    modules,
    sizes: {
      vmlinuz: (await Deno.stat(vmlinuz)).size,
      initrd: archive.length,
      iso: iso === undefined ? undefined : (await Deno.stat(iso)).size,
    },
  };
}
