/**
 * The kind handlers implemented in core, each over interfaces that runtimes fill: `inventory.refresh` (host
 * inventory + GPUs), `logs.collect` (recent logs and a journal summary, uploaded as `.tar.gz`), `node.reboot`
 * (through a rebooter), `disk.wipe` (root's wipe of each disk by stable id), `deploy.image` (root's streamed write of a raw or qcow2 image, root growth, config drive), `boot.kexec`
 * (root's kexec load and jump), `instance.snapshot` (a runtime's staged snapshot, uploaded). Other kinds register with their flags in kinds.ts and land with their issues.
 *
 * @module
 */
export {
  type GpuInventorySource,
  gpusToWire,
  type HostInventory,
  type HostInventoryReader,
  type Inventory,
  inventoryRefreshHandler,
} from "./inventory_refresh.ts";
export {
  checkUploadUrl,
  DEFAULT_LOGS_MAX_BYTES,
  logsCollectHandler,
  type LogSource,
  MAX_LOGS_MAX_BYTES,
  type Uploader,
  UploadError,
} from "./logs_collect.ts";
export { daemonLogSource, journalSummarySource } from "./log_sources.ts";
export { DEFAULT_LOG_RING_BYTES, LogRing } from "./log_ring.ts";
export {
  type FileUploader,
  instanceSnapshotHandler,
  type InstanceSnapshotter,
  SnapshotRefused,
  type StagedSnapshot,
} from "./instance_snapshot.ts";
export { diskWipeHandler, type DiskWiper } from "./disk_wipe.ts";
export { deployImageHandler, type DeployRequest, type ImageDeployer } from "./deploy_image.ts";
export {
  bootKexecHandler,
  type Kexec,
  KEXEC_GRACE_MS,
  type KexecLoadAnswer,
  type KexecLoadArgs,
} from "./boot_kexec.ts";
export { nodeRebootHandler, REBOOT_GRACE_MS, type Rebooter } from "./node_reboot.ts";
export { gzip, tar, type TarEntry, tarGz } from "./tar_gz.ts";
