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
import {
  DeployError,
  deployImage,
  type DiskDeployAnswer,
  GrowError,
  PartitionTableError,
  rewritePartitions,
  zeroBootArea,
} from "../../core/disks/mod.ts";
import type { HelperArgs } from "../../core/helper/protocol.ts";
import { HelperError } from "../../core/helper/errors.ts";
import { type CheckedDisk, DiskGuard, DiskRefused } from "./disk_guard.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { httpsImageStream, imageStreamReason } from "./image_stream.ts";
import { DiskClaims } from "./disk_claims.ts";
import { type FsGrower, FsGrowError, hostFsGrower } from "./grow_fs.ts";
import { buildConfigDrive, CONFIG_DRIVE_BYTES, ConfigDriveError, type ConfigDriveFiles } from "./config_drive.ts";

/** What the deploys use (tests: a guard over their loop disks' by-id dir, a fetch trusting their CA). */
export interface DiskDeploysOptions {
  readonly guard?: DiskGuard;
  readonly fetch?: typeof fetch;
  readonly open?: (disk: CheckedDisk) => Promise<BlockWipeDevice>;
  readonly log?: Logger;
  /** Shared with the wipes, so one disk is written by one op at a time. */
  readonly claims?: DiskClaims;
  /** Grows the root filesystem after `growRoot` grew its partition (default: e2fsck + resize2fs on ext). */
  readonly growFs?: FsGrower;
  /** Makes the config drive's filesystem image (default: mkfs.vfat + mcopy). */
  readonly configDrive?: (files: ConfigDriveFiles) => Promise<Uint8Array>;
}

/** The deploys root runs, by disk id. */
export class DiskDeploys {
  readonly #guard: DiskGuard;
  readonly #fetch: typeof fetch;
  readonly #open: (disk: CheckedDisk) => Promise<BlockWipeDevice>;
  readonly #log: Logger | undefined;
  readonly #claims: DiskClaims;
  readonly #growFs: FsGrower;
  readonly #configDrive: (files: ConfigDriveFiles) => Promise<Uint8Array>;
  readonly #running = new Set<string>();

  constructor(o: DiskDeploysOptions = {}) {
    this.#guard = o.guard ?? new DiskGuard();
    this.#fetch = o.fetch ?? fetch;
    this.#open = o.open ?? ((d) => BlockWipeDevice.open(d.kernelName));
    this.#log = o.log;
    this.#claims = o.claims ?? new DiskClaims();
    this.#growFs = o.growFs ?? hostFsGrower();
    this.#configDrive = o.configDrive ?? ((f) => buildConfigDrive(f));
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
        if (!a.growRoot && !a.configDrive) return { diskId: a.diskId, ok: true, ...out };
        return { diskId: a.diskId, ok: true, ...out, ...await this.#afterImage(dev, disk, a) };
      } catch (e) {
        if (e instanceof _GrowFailed) {
          return { diskId: a.diskId, ok: false, reason: e.reason, message: e.message, zeroedBootArea: true };
        }
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

  /**
   * After a verified image: the table rewritten (the last partition grown, a config drive partition added at the end),
   * the config drive written, the table re-read, the filesystem grown. A failure zeroes the boot area like any other
   * after a write: the command asked for more than the image and did not get it.
   */
  async #afterImage(dev: BlockWipeDevice, disk: CheckedDisk, a: HelperArgs["disk.deploy"]) {
    try {
      const drive = a.configDrive && await this.#configDrive({
        metaData: a.configDrive.metaData,
        userData: Uint8Array.from(atob(a.configDrive.userData), (c) => c.charCodeAt(0)),
        ...(a.configDrive.networkConfig ? { networkConfig: a.configDrive.networkConfig } : {}),
      });
      const t = await rewritePartitions(dev, {
        growLast: a.growRoot === true,
        tailBytes: drive ? CONFIG_DRIVE_BYTES : 0,
      });
      if (drive && t.added) {
        await dev.write(t.added.startSector * 512, drive);
        await dev.flush();
      }
      await dev.rereadPartitions();
      const out: Pick<Extract<DiskDeployAnswer, { ok: true }>, "grown" | "configDrivePartition"> = {
        ...(t.added ? { configDrivePartition: t.added.partition } : {}),
      };
      if (!t.grown) return out;
      const fs = await this.#growFs(disk.kernelName, t.grown.partition);
      const g = t.grown;
      this.#log?.info(
        { disk_id: a.diskId, partition: g.partition, sectors: g.newSectors, ...fs },
        "disk.deploy: grown",
      );
      return { ...out, grown: { partition: g.partition, sizeBytes: g.newSectors * 512, ...fs } };
    } catch (e) {
      if (
        !(e instanceof GrowError || e instanceof FsGrowError || e instanceof PartitionTableError ||
          e instanceof ConfigDriveError)
      ) throw e;
      await zeroBootArea(dev);
      const reason = e instanceof PartitionTableError ? "partition-table" : e.reason;
      throw new _GrowFailed(reason, `disk.deploy: after the image: ${e.message}`, { cause: e });
    }
  }
}

class _GrowFailed extends Error {
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
