/**
 * What root answers for one disk's wipe (`disk.wipe`): the attested outcome, or why the disk was not wiped — root's
 * refusal of the disk (`runtimes/disks/disk_guard.ts`: `unknown-disk`, `not-a-whole-disk`, `ramdisk-disk`, `mounted`,
 * `in-use`, `swap`) or the wipe's own (`cancelled`, `verify-failed`) — with every attempt made. A refusal is data, not
 * an error, so the agent branches on the reason.
 *
 * @module
 */
import type { WipeAttempt, WipeOutcome } from "./wipe.ts";

/** One disk's answer. */
export type DiskWipeAnswer =
  | { readonly diskId: string; readonly ok: true; readonly outcome: WipeOutcome }
  | {
    readonly diskId: string;
    readonly ok: false;
    readonly reason: string;
    readonly message: string;
    readonly attempts: readonly WipeAttempt[];
  };

/** What root answers for one deploy (`disk.deploy`): what was written and verified, or why not. */
export type DiskDeployAnswer =
  | {
    readonly diskId: string;
    readonly ok: true;
    readonly writtenBytes: number;
    readonly sha256: string;
    /** With `growRoot`: the partition grown, its new size, and whether its filesystem was grown too. */
    readonly grown?: {
      readonly partition: number;
      readonly sizeBytes: number;
      readonly filesystem: "ext" | "other";
      readonly resized: boolean;
    };
    /** With `configDrive`: the partition holding it. */
    readonly configDrivePartition?: number;
  }
  | {
    readonly diskId: string;
    readonly ok: false;
    readonly reason: string;
    readonly message: string;
    /** The first MiB was zeroed: the disk will not boot what was left. */
    readonly zeroedBootArea: boolean;
  };
