/**
 * The ramdisk's `disk.wipe`, `deploy.image` and `boot.kexec` over the root helper. `disk.wipe`: one `disk.wipe` request per disk, its answer's shape checked before
 * use; the command's cancel becomes `disk.wipe_cancel` for that disk, and root stops between chunks and answers
 * `cancelled`.
 *
 * @module
 */
import type { DiskWiper } from "../../core/commands/kind_handlers/disk_wipe.ts";
import type { ImageDeployer } from "../../core/commands/kind_handlers/deploy_image.ts";
import type { Kexec, KexecLoadAnswer, KexecLoadArgs } from "../../core/commands/kind_handlers/boot_kexec.ts";
import type { DiskDeployAnswer, DiskWipeAnswer } from "../../core/disks/mod.ts";
import { HelperError } from "../../core/helper/mod.ts";
import type { HelperClient } from "./client.ts";

/** {@link DiskWiper} through the helper's `disk.wipe` and `disk.wipe_cancel`. */
export class HelperDiskWiper implements DiskWiper {
  readonly #c: HelperClient;
  constructor(c: HelperClient) {
    this.#c = c;
  }

  async wipe(a: Parameters<DiskWiper["wipe"]>[0], signal: AbortSignal): Promise<DiskWipeAnswer> {
    // The cancel is sent without waiting; the wipe's own answer says what happened. A cancel the helper could not
    // take (HelperError) leaves the wipe running to its end; anything else is a fault of this side, kept and thrown
    // from the wipe's call (a rethrow inside the detached catch would be an unhandled rejection that ends the agent).
    let cancelFault: { readonly error: unknown } | undefined;
    const onAbort = () => {
      this.#c.call("disk.wipe_cancel", { diskId: a.diskId }).catch((e) => {
        if (!(e instanceof HelperError)) cancelFault = { error: e };
      });
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const ans = await this.#c.call("disk.wipe", a);
      const ok = typeof ans === "object" && ans !== null && ans.diskId === a.diskId &&
        (ans.ok ? Array.isArray(ans.outcome?.attempts) : typeof ans.reason === "string" && Array.isArray(ans.attempts));
      if (!ok) throw new HelperError("malformed", "disk.wipe: the answer's shape");
      if (cancelFault) throw cancelFault.error;
      return ans;
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }
}

/** {@link ImageDeployer} through the helper's `disk.deploy` (root fetches, writes and verifies). */
export class HelperImageDeployer implements ImageDeployer {
  readonly #c: HelperClient;
  constructor(c: HelperClient) {
    this.#c = c;
  }

  async deploy(a: Parameters<ImageDeployer["deploy"]>[0]): Promise<DiskDeployAnswer> {
    const ans = await this.#c.call("disk.deploy", a);
    const ok = typeof ans === "object" && ans !== null && ans.diskId === a.diskId &&
      (ans.ok
        ? Number.isSafeInteger(ans.writtenBytes) && ans.sha256 === a.sha256
        : typeof ans.reason === "string" && typeof ans.zeroedBootArea === "boolean");
    if (!ok) throw new HelperError("malformed", "disk.deploy: the answer's shape");
    return ans;
  }
}

/** {@link Kexec} through the helper's `kexec.load` and `kexec.exec` (root mounts, reads, loads and jumps). */
export class HelperKexec implements Kexec {
  readonly #c: HelperClient;
  constructor(c: HelperClient) {
    this.#c = c;
  }

  async load(a: KexecLoadArgs): Promise<KexecLoadAnswer> {
    const ans = await this.#c.call("kexec.load", a);
    const ok = typeof ans === "object" && ans !== null &&
      (ans.ok ? typeof ans.kernelSha256 === "string" : typeof ans.reason === "string");
    if (!ok) throw new HelperError("malformed", "kexec.load: the answer's shape");
    return ans;
  }

  async exec(): Promise<void> {
    await this.#c.call("kexec.exec", {});
  }
}
