/**
 * The port `disk.wipe` works through: one whole disk, opened by root for wiping (the helper resolved it from a stable
 * id and re-checked it first, `runtimes/disks/disk_guard.ts`). A real implementation drives a block device
 * (`runtimes/disks/block_wipe_device.ts`), the fake keeps the bytes in memory (`fake_wipe_device.ts`); one contract
 * suite runs against both (`runtimes/disks/wipe_device_contract_test.ts`).
 *
 * @module
 */

/**
 * The erase methods a device itself performs, strongest first (000 via issue 19: NVMe sanitize/format, ATA secure
 * erase, `blkdiscard --secure`, `blkdiscard`). Overwrite is not among them: any device that takes writes can be
 * overwritten, so the ladder always ends with it (`wipe.ts`).
 */
export const DEVICE_METHODS = [
  "nvme-sanitize",
  "nvme-format",
  "ata-secure-erase",
  "blkdiscard-secure",
  "blkdiscard",
] as const;

/** A method the device performs itself. */
export type DeviceMethod = typeof DEVICE_METHODS[number];

/** Every wipe method, in the ladder's order: the device's own, then the two overwrite passes. */
export type WipeMethod = DeviceMethod | "overwrite-zero" | "overwrite-random";

/** A device method that ran and failed: the ladder goes on to the next rung with these words kept. */
export class DeviceMethodFailed extends Error {
  constructor(readonly method: DeviceMethod, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "DeviceMethodFailed";
  }
}

/** One whole disk, opened for wiping. */
export interface WipeDevice {
  /** The disk's size in bytes (a multiple of 512). */
  readonly sizeBytes: number;
  /** The device methods this disk offers, strongest first (a subset of {@link DEVICE_METHODS}). */
  methods(): Promise<readonly DeviceMethod[]>;
  /**
   * Runs `method` over the whole disk and returns once the device reports it done; throws {@link DeviceMethodFailed}
   * when the device refuses or fails it (nothing else is reported as a method failure).
   */
  erase(method: DeviceMethod): Promise<void>;
  /** Writes `data` at `offset` (both multiples of 512). */
  write(offset: number, data: Uint8Array): Promise<void>;
  /** Reads `length` bytes at `offset`, from the device, not a cache that a write left behind. */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Makes every write so far durable on the device. */
  flush(): Promise<void>;
}
