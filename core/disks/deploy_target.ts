/**
 * The ports a deploy writes through (`deploy.ts`, `qcow2_stream.ts`, `grow_partition.ts`): the disk, and the image
 * stream with the sink its bytes go to.
 *
 * @module
 */
import type { WipeDevice } from "./wipe_device.ts";

/** Where a deploy writes: a whole disk, as the wipe opens it, that can re-read its partition table. */
export interface DeployTarget extends Pick<WipeDevice, "sizeBytes" | "write" | "read" | "flush"> {
  /** Asks the kernel to re-read the partition table; throws `PartitionTableError` (`deploy.ts`) when it cannot. */
  rereadPartitions(): Promise<void>;
  /**
   * Makes `[offset, offset+length)` read as zeros (both multiples of 512) without sending the zeros (BLKZEROOUT);
   * absent, zeros are written.
   */
  zeroRange?(offset: number, length: number): Promise<void>;
}

/** A sink for the stream's bytes, in order. */
export interface ImageSink {
  write(chunk: Uint8Array): Promise<void>;
  end(): Promise<void>;
}

/** Streams the image into `sink` and returns the SHA-256 (hex) of the bytes it passed. */
export type ImageStream = (sink: ImageSink, maxBytes: number) => Promise<string>;
