/**
 * Disks the provisioning ramdisk destroys on purpose (000 §Kinds by lane: `disk.wipe` attested destructive, six hours;
 * issue 19). The parts:
 *
 * - the port {@link WipeDevice}: one whole disk opened by root, with the device methods it offers; the fake
 *   {@link FakeWipeDevice} here, the real block device in `runtimes/disks/block_wipe_device.ts`;
 * - {@link wipeDisk}: the method ladder, the overwrite in chunks with progress and cancel, the read-back
 *   verification, and the attested {@link WipeOutcome} (each rung tried, the one that held, what was verified);
 * - {@link deployImage}: an image streamed onto a whole disk, raw or qcow2 ({@link Qcow2Converter} converts it while it
 *   streams, header checks first, with a bounded spool for clusters that arrive before their tables), digest, partition
 *   table re-read, read-back verify; the first MiB zeroed on any late failure;
 * - refusals ({@link WipeError}: `cancelled`, `verify-failed`). Which disk may be wiped at all is root's check, made
 *   where the disk is resolved from its stable id (`runtimes/disks/disk_guard.ts`: `ramdisk-disk`, `mounted`,
 *   `in-use`, `swap`, `unknown-disk`, `not-a-whole-disk`).
 *
 * @example
 * ```ts
 * const dev = new FakeWipeDevice({ sizeBytes: 8 << 20, methods: ["blkdiscard"] });
 * const out = await wipeDisk(dev, { verify: "all" });
 * // out.method === "blkdiscard", out.attempts: [{ method: "blkdiscard", outcome: "verified" }]
 * ```
 *
 * Choices the seed left open (its "what the ramdisk does" page is not among the seeds), with the agents they follow:
 *
 * - **Disks by stable id only** (tink-worker's actions name disks by path; Ironic by its root-device hints): the agent
 *   sends a `/dev/disk/by-id` name from the inventory and root resolves it each time, so a kernel name that moved
 *   between boots (`sda` ↔ `sdb`) can never point a wipe at the wrong disk.
 * - **Strongest first, then verify** (Ironic Python Agent's `erase_devices_express` and `erase_devices`): firmware
 *   methods, then discard, then overwrite; IPA trusts a firmware erase without reading back, bcd does not: every rung
 *   is verified, and a rung that does not read back as it should is recorded and the next one runs.
 * - **One random pass, not shred's three** (IPA's default `agent_erase_devices_iterations` is 1): modern disks do not
 *   keep recoverable remanence under one overwrite, and a random pass is asked for only where a policy wants it.
 * - **Sampled verification by default** (the first and last MiB, where partition tables and RAID metadata live, and
 *   256 random 4 KiB blocks); `all` reads every byte and takes as long as the wipe.
 *
 * @module
 */
export {
  DEFAULT_CHUNK,
  SAMPLE_BLOCKS,
  sampleRegions,
  type VerifyMode,
  type WipeAttempt,
  wipeDisk,
  WipeError,
  type WipeHooks,
  wipeLadder,
  type WipeOptions,
  type WipeOutcome,
  type WipeProgress,
} from "./wipe.ts";
export {
  DEVICE_METHODS,
  type DeviceMethod,
  DeviceMethodFailed,
  type WipeDevice,
  type WipeMethod,
} from "./wipe_device.ts";
export { DISK_ID, isDiskId } from "./disk_id.ts";
export {
  DeployError,
  type DeployFormat,
  deployImage,
  type DeployOptions,
  type DeployOutcome,
  deployRawImage,
  type DeployTarget,
  type ImageSink,
  type ImageStream,
  PartitionTableError,
  zeroBootArea,
} from "./deploy.ts";
export {
  type AddedPartition,
  GrowError,
  growLastPartition,
  type PartitionGrowth,
  type RewriteOptions,
  type RewriteOutcome,
  rewritePartitions,
} from "./grow_partition.ts";
export { MAX_L1_BYTES, Qcow2Converter, Qcow2ConvertError, type Qcow2ConvertOptions } from "./qcow2_stream.ts";
export type { DiskDeployAnswer, DiskWipeAnswer } from "./wipe_answer.ts";
export { FakeWipeDevice, type FakeWipeDeviceOptions } from "./fake_wipe_device.ts";
