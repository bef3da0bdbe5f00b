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
import type { DeployTarget, ImageSink, ImageStream } from "./deploy_target.ts";
export type { DeployTarget, ImageSink, ImageStream };
import { Qcow2Converter, Qcow2ConvertError, type Qcow2ConvertOptions } from "./qcow2_stream.ts";

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

/** The image formats a deploy writes: `raw` byte for byte, `qcow2` converted while streaming (`qcow2_stream.ts`). */
export type DeployFormat = "raw" | "qcow2";

/** Options of {@link deployImage}. */
export interface DeployOptions {
  /** `raw` unless stated; a qcow2 image is never probed, its format is what the command says. */
  readonly format?: DeployFormat;
  readonly chunkBytes?: number;
  /** Tells a stream's refusal (its `reason`) from anything else. */
  readonly streamError?: (e: unknown) => string | undefined;
  /** The qcow2 converter's memory bounds. */
  readonly qcow2?: Qcow2ConvertOptions;
}

/** What writes the streamed bytes onto the disk and later checks them there. */
interface _Writer {
  readonly sink: ImageSink;
  touched(): boolean;
  written(): number;
  /** Reads the disk back: `undefined` when it holds what was written, else what differs. */
  verify(): Promise<string | undefined>;
}

/**
 * Streams an image onto `dev`, checks its digest against `sha256` (the SHA-256 of the bytes as streamed), flushes,
 * re-reads the partition table and verifies by reading back: a raw image against the digest itself, a qcow2 image
 * against the converter's record of what it wrote ({@link Qcow2Converter.verify}).
 */
export async function deployImage(
  dev: DeployTarget,
  stream: ImageStream,
  sha256: string,
  o: DeployOptions = {},
): Promise<DeployOutcome> {
  const want = sha256.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(want)) throw new RangeError(`deploy.image: ${JSON.stringify(sha256)} is not a SHA-256`);
  const chunk = o.chunkBytes ?? _CHUNK;
  const w = o.format === "qcow2" ? _qcow2Writer(dev, o.qcow2) : _rawWriter(dev, chunk, want);
  // A qcow2 file is larger than what it maps only by its tables (1/64 of the data at 512-byte clusters) and a few
  // metadata clusters (2 MiB each at most).
  const maxBytes = o.format === "qcow2" ? dev.sizeBytes + Math.ceil(dev.sizeBytes / 32) + 32 * _MIB : dev.sizeBytes;
  let got: string;
  try {
    got = await stream(w.sink, maxBytes);
  } catch (e) {
    const reason = e instanceof Qcow2ConvertError ? e.reason : o.streamError?.(e);
    if (reason === undefined) throw e;
    const zeroed = w.touched() && (await _zeroBootArea(dev), true);
    throw new DeployError(reason, `deploy.image: ${e instanceof Error ? e.message : e}`, zeroed, { cause: e });
  }
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
  const wrong = await w.verify();
  if (wrong !== undefined) {
    await _zeroBootArea(dev);
    throw new DeployError("verify-failed", `deploy.image: ${wrong}`, true);
  }
  return { writtenBytes: w.written(), sha256: want };
}

/** {@link deployImage} of a raw image. */
export function deployRawImage(
  dev: DeployTarget,
  stream: ImageStream,
  sha256: string,
  o: Omit<DeployOptions, "format"> = {},
): Promise<DeployOutcome> {
  return deployImage(dev, stream, sha256, { ...o, format: "raw" });
}

function _rawWriter(dev: DeployTarget, chunk: number, want: string): _Writer {
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
  return {
    sink: {
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
    },
    touched: () => touched,
    written: () => offset,
    async verify() {
      const back = await _readBackDigest(dev, offset, chunk);
      return back === want ? undefined : `the disk reads back as SHA-256 ${back}, not ${want}`;
    },
  };
}

function _qcow2Writer(dev: DeployTarget, o: Qcow2ConvertOptions | undefined): _Writer {
  const conv = new Qcow2Converter(dev, o);
  return {
    sink: conv,
    touched: () => conv.touched,
    written: () => conv.virtualSize,
    async verify() {
      return (await conv.verify()) ? undefined : "the disk does not read back as the image's clusters were written";
    },
  };
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

/** Zeroes the first MiB (partition table and boot code) and flushes: the disk will not boot what is on it. */
export async function zeroBootArea(dev: DeployTarget): Promise<void> {
  await _zeroBootArea(dev);
}

async function _zeroBootArea(dev: DeployTarget): Promise<void> {
  await dev.write(0, new Uint8Array(Math.min(_MIB, dev.sizeBytes)));
  await dev.flush();
}
