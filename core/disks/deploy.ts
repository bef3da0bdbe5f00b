/**
 * Writing a raw image onto a whole disk as it streams (`deploy.image`, issue 19), then proving it: the bytes' SHA-256
 * is taken while they pass (by the stream, {@link ImageStream}), compared with the digest asked for, the disk is
 * flushed, its partition table re-read, and the written bytes read back from the device and hashed again.
 *
 * Never half-trusted: any failure once a byte has been written — a download that breaks, a digest that differs, a
 * read-back that differs — zeroes the first MiB (the partition table and boot code) before the error is thrown, so
 * the disk does not boot what was left. Choices (Ironic Python Agent's `write_image` and tink-worker's `image2disk`
 * are the models): images are whole-disk images, so one whose partition table the kernel cannot read fails
 * `partition-table` (zeroed like the rest); the disk is written in 4 MiB aligned chunks, the last padded with zeros to a sector; an image
 * larger than the disk is refused by the stream's size bound before it is written past the end.
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { WipeDevice } from "./wipe_device.ts";

/** Where a deploy writes: a whole disk, as the wipe opens it, that can re-read its partition table. */
export interface DeployTarget extends Pick<WipeDevice, "sizeBytes" | "write" | "read" | "flush"> {
  /** Asks the kernel to re-read the partition table; throws {@link PartitionTableError} when it cannot. */
  rereadPartitions(): Promise<void>;
}

/** A sink for the stream's bytes, in order. */
export interface ImageSink {
  write(chunk: Uint8Array): Promise<void>;
  end(): Promise<void>;
}

/** Streams the image into `sink` and returns the SHA-256 (hex) of the bytes it passed. */
export type ImageStream = (sink: ImageSink, maxBytes: number) => Promise<string>;

/** Why a deploy failed: `digest-mismatch`, `verify-failed`, or the stream's own reason (`not-https`, `too-large`, …). */
export class DeployError extends Error {
  override name = "DeployError";
  constructor(readonly reason: string, message: string, readonly zeroedBootArea: boolean, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The kernel could not read the written disk's partition table (a whole-disk image must carry one). */
export class PartitionTableError extends Error {
  override name = "PartitionTableError";
}

/** What a deploy did. */
export interface DeployOutcome {
  readonly writtenBytes: number;
  readonly sha256: string;
}

const _CHUNK = 4 * 1024 * 1024;
const _MIB = 1024 * 1024;

/**
 * Streams an image onto `dev`, checks its digest against `sha256`, flushes, re-reads the partition table and verifies
 * by reading back. `streamError` tells a stream's refusal (its `reason`) from anything else.
 */
export async function deployRawImage(
  dev: DeployTarget,
  stream: ImageStream,
  sha256: string,
  o: { chunkBytes?: number; streamError?: (e: unknown) => string | undefined } = {},
): Promise<DeployOutcome> {
  const want = sha256.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(want)) throw new RangeError(`deploy.image: ${JSON.stringify(sha256)} is not a SHA-256`);
  const chunk = o.chunkBytes ?? _CHUNK;
  const buf = new Uint8Array(chunk);
  let fill = 0;
  let offset = 0;
  let touched = false;
  const put = async (n: number) => {
    touched = true;
    await dev.write(offset, buf.slice(0, n));
    offset += n;
    fill = 0;
  };
  let got: string;
  try {
    got = await stream({
      async write(bytes) {
        for (let at = 0; at < bytes.length;) {
          const n = Math.min(chunk - fill, bytes.length - at);
          buf.set(bytes.subarray(at, at + n), fill);
          fill += n;
          at += n;
          if (fill === chunk) await put(chunk);
        }
      },
      async end() {
        if (fill > 0) {
          const padded = Math.ceil(fill / 512) * 512;
          buf.fill(0, fill, padded);
          const real = fill;
          await put(padded);
          offset -= padded - real;
        }
      },
    }, dev.sizeBytes);
  } catch (e) {
    const reason = o.streamError?.(e);
    if (reason === undefined) throw e;
    const zeroed = touched && (await _zeroBootArea(dev), true);
    throw new DeployError(reason, `deploy.image: ${e instanceof Error ? e.message : e}`, zeroed, { cause: e });
  }
  const written = offset;
  if (got !== want) {
    await _zeroBootArea(dev);
    throw new DeployError("digest-mismatch", `deploy.image: the image's SHA-256 is ${got}, not ${want}`, true);
  }
  await dev.flush();
  try {
    await dev.rereadPartitions();
  } catch (e) {
    if (!(e instanceof PartitionTableError)) throw e;
    await _zeroBootArea(dev);
    throw new DeployError("partition-table", `deploy.image: ${e.message}`, true, { cause: e });
  }
  const back = await _readBackDigest(dev, written, chunk);
  if (back !== want) {
    await _zeroBootArea(dev);
    throw new DeployError("verify-failed", `deploy.image: the disk reads back as SHA-256 ${back}, not ${want}`, true);
  }
  return { writtenBytes: written, sha256: want };
}

async function _readBackDigest(dev: DeployTarget, length: number, chunk: number): Promise<string> {
  const h = createHash("sha256");
  for (let off = 0; off < length; off += chunk) {
    const n = Math.min(chunk, length - off);
    const padded = Math.ceil(n / 512) * 512;
    h.update((await dev.read(off, padded)).subarray(0, n));
  }
  return h.digest("hex");
}

async function _zeroBootArea(dev: DeployTarget): Promise<void> {
  await dev.write(0, new Uint8Array(Math.min(_MIB, dev.sizeBytes)));
  await dev.flush();
}
