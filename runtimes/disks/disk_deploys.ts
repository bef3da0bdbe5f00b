/**
 * Root's `disk.deploy`: the disk asked again of {@link DiskGuard} by its stable id, opened, and the image at the
 * URL streamed onto it by `deployImage` — raw byte for byte, qcow2 converted while it streams by bcd's own reader,
 * header checks first (`core/disks/qcow2_stream.ts`) — (https only, redirects only to https, SHA-256 while streaming, partition
 * table re-read, read-back verify, the first MiB zeroed on any failure after a write). The answer is data: what was
 * written, or the reason. One deploy per disk at a time (a second is `busy`).
 *
 * Root fetches the image itself (Ironic Python Agent's model: the agent that writes the disk downloads the image), so
 * the bytes never cross the helper's socket, whose lines are JSON and bounded.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { DeployError, deployImage, type DiskDeployAnswer } from "../../core/disks/mod.ts";
import type { HelperArgs } from "../../core/helper/protocol.ts";
import { HelperError } from "../../core/helper/errors.ts";
import { type CheckedDisk, DiskGuard, DiskRefused } from "./disk_guard.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { httpsImageStream, imageStreamReason } from "./image_stream.ts";
import { DiskClaims } from "./disk_claims.ts";

/** What the deploys use (tests: a guard over their loop disks' by-id dir, a fetch trusting their CA). */
export interface DiskDeploysOptions {
  readonly guard?: DiskGuard;
  readonly fetch?: typeof fetch;
  readonly open?: (disk: CheckedDisk) => Promise<BlockWipeDevice>;
  readonly log?: Logger;
  /** Shared with the wipes, so one disk is written by one op at a time. */
  readonly claims?: DiskClaims;
}

/** The deploys root runs, by disk id. */
export class DiskDeploys {
  readonly #guard: DiskGuard;
  readonly #fetch: typeof fetch;
  readonly #open: (disk: CheckedDisk) => Promise<BlockWipeDevice>;
  readonly #log: Logger | undefined;
  readonly #claims: DiskClaims;
  readonly #running = new Set<string>();

  constructor(o: DiskDeploysOptions = {}) {
    this.#guard = o.guard ?? new DiskGuard();
    this.#fetch = o.fetch ?? fetch;
    this.#open = o.open ?? ((d) => BlockWipeDevice.open(d.kernelName));
    this.#log = o.log;
    this.#claims = o.claims ?? new DiskClaims();
  }

  /** Checks the disk and deploys the image onto it; answers what was written or why not. */
  async deploy(a: HelperArgs["disk.deploy"]): Promise<DiskDeployAnswer> {
    if (this.#running.has(a.diskId)) throw new HelperError("busy", `disk.deploy: a deploy to ${a.diskId} is running`);
    this.#running.add(a.diskId);
    try {
      let disk: CheckedDisk;
      try {
        disk = await this.#guard.check(a.diskId);
      } catch (e) {
        if (!(e instanceof DiskRefused)) throw e;
        return { diskId: a.diskId, ok: false, reason: e.reason, message: e.message, zeroedBootArea: false };
      }
      const release = this.#claims.claim(disk.kernelName, `disk.deploy to ${a.diskId}`);
      const dev = await this.#open(disk).catch((e) => {
        release();
        throw e;
      });
      try {
        const out = await deployImage(dev, httpsImageStream(a.url, { fetch: this.#fetch }), a.sha256, {
          format: a.format,
          streamError: imageStreamReason,
        });
        this.#log?.info({ disk_id: a.diskId, written: out.writtenBytes }, "disk.deploy: written and verified");
        return { diskId: a.diskId, ok: true, ...out };
      } catch (e) {
        if (!(e instanceof DeployError)) throw e;
        return { diskId: a.diskId, ok: false, reason: e.reason, message: e.message, zeroedBootArea: e.zeroedBootArea };
      } finally {
        dev.close();
        release();
      }
    } finally {
      this.#running.delete(a.diskId);
    }
  }
}
