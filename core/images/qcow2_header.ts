/**
 * The qcow2 header check of seed 000 §Tenant images, from QEMU's `docs/interop/qcow2.txt`: the header and its
 * header extensions are parsed here from a bounded prefix of the file (never more than the first cluster, at most
 * 2 MiB), and nothing the image names is ever opened. A `qcow2` image is refused, with an {@link ImageRefused}
 * reason, when it is not a version 2 or 3 qcow2 or its header is truncated or malformed (`malformed`, which also
 * covers the dirty and corrupt bits), names a backing file (`backing-file`), names an external data file
 * (`data-file`), sets an incompatible feature bit bcd does not know (`unknown-feature`) or is encrypted
 * (`encrypted`). `raw` and `iso` images are never probed.
 *
 * @module
 */
import { ImageRefused } from "./errors.ts";

/** The qcow2 magic, `QFI\xfb`. */
export const QCOW2_MAGIC = 0x514649fb;
/** Largest prefix ever read: the first cluster at the largest cluster size (cluster_bits 21). */
export const QCOW2_MAX_PREFIX = 2 * 1024 * 1024;
/** Smallest and largest cluster_bits qcow2 allows. */
export const MIN_CLUSTER_BITS = 9;
export const MAX_CLUSTER_BITS = 21;

/** Incompatible feature bits (qcow2.txt). */
export const INCOMPAT_DIRTY = 1n << 0n;
export const INCOMPAT_CORRUPT = 1n << 1n;
export const INCOMPAT_DATA_FILE = 1n << 2n;
export const INCOMPAT_COMPRESSION = 1n << 3n;
export const INCOMPAT_EXTL2 = 1n << 4n;
/** Every incompatible bit bcd knows; any other is `unknown-feature`. */
export const INCOMPAT_KNOWN = INCOMPAT_DIRTY | INCOMPAT_CORRUPT | INCOMPAT_DATA_FILE | INCOMPAT_COMPRESSION |
  INCOMPAT_EXTL2;

/** Header extension types (qcow2.txt). */
export const EXT_END = 0x00000000;
export const EXT_BACKING_FORMAT = 0xe2792aca;
export const EXT_FEATURE_TABLE = 0x6803f857;
export const EXT_BITMAPS = 0x23852875;
export const EXT_CRYPTO = 0x0537be77;
export const EXT_DATA_FILE = 0x44415441;

/** What the header says, once it parsed. */
export interface Qcow2Header {
  readonly version: 2 | 3;
  readonly clusterBits: number;
  readonly virtualSize: bigint;
  readonly cryptMethod: number;
  readonly incompatible: bigint;
  readonly compatible: bigint;
  readonly autoclear: bigint;
  readonly headerLength: number;
  readonly refcountOrder: number;
  /** 0 zlib, 1 zstd. */
  readonly compressionType: number;
  /** Whether backing_file_offset or backing_file_size is non-zero. */
  readonly backingFieldsSet: boolean;
  /** The backing file name, when backing_file_offset is set. */
  readonly backingFile: string | null;
  /** The backing file format extension's value. */
  readonly backingFormat: string | null;
  /** The external data file extension's value. */
  readonly dataFile: string | null;
  /** Whether the full disk encryption header pointer extension is present. */
  readonly cryptoExtension: boolean;
}

const _utf8 = new TextDecoder("utf-8", { fatal: true });

function _malformed(msg: string): ImageRefused {
  return new ImageRefused("malformed", `not a valid qcow2 image: ${msg}`);
}

function _str(b: Uint8Array, what: string): string {
  try {
    return _utf8.decode(b);
  } catch (e) {
    throw new ImageRefused("malformed", `not a valid qcow2 image: ${what} is not UTF-8`, { cause: e });
  }
}

/**
 * Parses a qcow2 header and its extensions from `prefix`, the first bytes of the file (the first cluster, or the
 * whole file when it is shorter). Throws `malformed` for anything structurally wrong; policy refusals are left to
 * {@link checkQcow2Header}.
 */
export function parseQcow2Header(prefix: Uint8Array): Qcow2Header {
  const dv = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
  if (prefix.length < 72) throw _malformed(`truncated header (${prefix.length} bytes)`);
  if (dv.getUint32(0) !== QCOW2_MAGIC) throw _malformed("no QFI\\xfb magic");
  const version = dv.getUint32(4);
  if (version !== 2 && version !== 3) throw _malformed(`version ${version}; only 2 and 3 exist`);
  const backingOffset = dv.getBigUint64(8);
  const backingSize = dv.getUint32(16);
  const clusterBits = dv.getUint32(20);
  if (clusterBits < MIN_CLUSTER_BITS || clusterBits > MAX_CLUSTER_BITS) {
    throw _malformed(`cluster_bits ${clusterBits} outside ${MIN_CLUSTER_BITS}–${MAX_CLUSTER_BITS}`);
  }
  const clusterSize = 1 << clusterBits;
  const virtualSize = dv.getBigUint64(24);
  const cryptMethod = dv.getUint32(32);
  let incompatible = 0n, compatible = 0n, autoclear = 0n;
  let refcountOrder = 4, headerLength = 72, compressionType = 0;
  if (version === 3) {
    if (prefix.length < 104) throw _malformed(`truncated version 3 header (${prefix.length} bytes)`);
    incompatible = dv.getBigUint64(72);
    compatible = dv.getBigUint64(80);
    autoclear = dv.getBigUint64(88);
    refcountOrder = dv.getUint32(96);
    headerLength = dv.getUint32(100);
    if (headerLength < 104 || headerLength % 8 !== 0) {
      throw _malformed(`header_length ${headerLength} (at least 104 and a multiple of 8)`);
    }
    if (headerLength > clusterSize) throw _malformed(`header_length ${headerLength} exceeds the first cluster`);
    if (refcountOrder > 6) throw _malformed(`refcount_order ${refcountOrder} (at most 6)`);
    if (headerLength > 104) {
      if (prefix.length < 105) throw _malformed("truncated header");
      compressionType = prefix[104]!;
    }
  }
  if ((incompatible & INCOMPAT_DIRTY) !== 0n) throw _malformed("the dirty bit is set (refcounts may be inconsistent)");
  if ((incompatible & INCOMPAT_CORRUPT) !== 0n) throw _malformed("the corrupt bit is set");
  if (compressionType > 1) throw _malformed(`compression type ${compressionType} (0 zlib, 1 zstd)`);
  if (((incompatible & INCOMPAT_COMPRESSION) !== 0n) !== (compressionType !== 0)) {
    throw _malformed("the compression type bit and the compression type field disagree");
  }

  let backingFile: string | null = null;
  if (backingOffset !== 0n) {
    if (backingSize === 0 || backingSize > 1023) throw _malformed(`backing_file_size ${backingSize} (1–1023)`);
    const end = backingOffset + BigInt(backingSize);
    if (end > BigInt(Math.min(clusterSize, prefix.length))) {
      throw _malformed("the backing file name lies outside the first cluster");
    }
    backingFile = _str(prefix.subarray(Number(backingOffset), Number(end)), "the backing file name");
  }

  let backingFormat: string | null = null;
  let dataFile: string | null = null;
  let cryptoExtension = false;
  const limit = Math.min(clusterSize, prefix.length);
  const seen = new Set<number>();
  let off = headerLength;
  for (;;) {
    if (off + 8 > limit) {
      throw _malformed(
        limit < clusterSize && off + 8 <= clusterSize
          ? "the file ends inside the header extensions"
          : "the header extensions have no end marker in the first cluster",
      );
    }
    const type = dv.getUint32(off);
    const len = dv.getUint32(off + 4);
    if (type === EXT_END) break;
    const padded = off + 8 + Math.ceil(len / 8) * 8;
    if (padded > clusterSize) throw _malformed(`header extension 0x${type.toString(16)} runs past the first cluster`);
    if (padded > limit) throw _malformed("the file ends inside the header extensions");
    const data = prefix.subarray(off + 8, off + 8 + len);
    if (type === EXT_BACKING_FORMAT || type === EXT_DATA_FILE || type === EXT_CRYPTO) {
      if (seen.has(type)) throw _malformed(`header extension 0x${type.toString(16)} appears twice`);
      seen.add(type);
    }
    if (type === EXT_BACKING_FORMAT) {
      if (len === 0 || len > 15) throw _malformed(`backing format extension of ${len} bytes (1–15)`);
      backingFormat = _str(data, "the backing format");
    } else if (type === EXT_DATA_FILE) {
      dataFile = _str(data, "the data file name");
    } else if (type === EXT_CRYPTO) {
      cryptoExtension = true;
    }
    off = padded;
  }
  return {
    version,
    clusterBits,
    virtualSize,
    cryptMethod,
    incompatible,
    compatible,
    autoclear,
    headerLength,
    refcountOrder,
    compressionType,
    backingFieldsSet: backingOffset !== 0n || backingSize !== 0,
    backingFile,
    backingFormat,
    dataFile,
    cryptoExtension,
  };
}

/**
 * The policy refusals other than the backing file, in the seed's order: `data-file`, `unknown-feature`,
 * `encrypted`. Shared by the base-image check and {@link checkOverlay}.
 */
export function checkQcow2Features(h: Qcow2Header): void {
  if ((h.incompatible & INCOMPAT_DATA_FILE) !== 0n || h.dataFile !== null) {
    throw new ImageRefused(
      "data-file",
      `the image names an external data file${h.dataFile !== null ? ` ${JSON.stringify(h.dataFile)}` : ""}`,
    );
  }
  const unknown = h.incompatible & ~INCOMPAT_KNOWN;
  if (unknown !== 0n) {
    throw new ImageRefused(
      "unknown-feature",
      `the image sets unknown incompatible feature bits 0x${unknown.toString(16)}`,
    );
  }
  if (h.cryptMethod !== 0 || h.cryptoExtension) {
    throw new ImageRefused("encrypted", `the image is encrypted (crypt_method ${h.cryptMethod})`);
  }
}

/** The base-image policy: no backing file, then {@link checkQcow2Features}. */
export function checkQcow2Header(h: Qcow2Header): void {
  if (h.backingFieldsSet) {
    throw new ImageRefused(
      "backing-file",
      `the image names backing file ${JSON.stringify(h.backingFile ?? "")}; a base image may name none`,
    );
  }
  checkQcow2Features(h);
}

async function _readFully(f: Deno.FsFile, buf: Uint8Array): Promise<number> {
  let got = 0;
  while (got < buf.length) {
    const n = await f.read(buf.subarray(got));
    if (n === null) break;
    got += n;
  }
  return got;
}

/**
 * Opens the image at `path` read-only: it must be a regular file (not a symlink, a FIFO or a directory, which are
 * `malformed`) and still the same file once open. A file that does not exist or cannot be read throws the
 * `Deno.errors` of the open, never a verdict.
 */
async function _openImage(path: string): Promise<{ file: Deno.FsFile; size: number }> {
  const ls = await Deno.lstat(path);
  if (!ls.isFile) throw _malformed(`${path} is not a regular file`);
  const f = await Deno.open(path, { read: true });
  try {
    const st = await f.stat();
    if (!st.isFile || st.ino !== ls.ino || st.dev !== ls.dev) throw _malformed(`${path} changed while it was opened`);
    return { file: f, size: st.size };
  } catch (e) {
    f.close();
    throw e;
  }
}

/**
 * Reads the bounded prefix of the image at `path`: a regular file (not a symlink), opened read-only, of which at
 * most the first cluster (≤ {@link QCOW2_MAX_PREFIX}) is read. Nothing else is opened.
 */
export async function readQcow2Prefix(path: string): Promise<Uint8Array> {
  const { file: f, size } = await _openImage(path);
  try {
    const head = new Uint8Array(Math.min(512, size));
    const n = await _readFully(f, head);
    if (n < 24) return head.subarray(0, n);
    const bits = new DataView(head.buffer).getUint32(20);
    if (bits < MIN_CLUSTER_BITS || bits > MAX_CLUSTER_BITS) return head.subarray(0, n);
    const want = Math.min(1 << bits, size, QCOW2_MAX_PREFIX);
    if (want <= n) return head.subarray(0, want);
    const out = new Uint8Array(want);
    out.set(head.subarray(0, n));
    const m = await _readFully(f, out.subarray(n));
    return out.subarray(0, n + m);
  } finally {
    f.close();
  }
}

/** Image formats bcd keeps (seed 000: `images/<sha256>.<format>`). */
export type ImageFormat = "qcow2" | "raw" | "iso";

/** The outcome of an accepted image check. */
export interface ImageCheck {
  format: ImageFormat;
  /** false for raw and iso, which are never probed. */
  probed: boolean;
  header?: Qcow2Header;
}

/**
 * Checks a tenant base image of `format` at `path`: a `qcow2` header is parsed and held to the base-image policy
 * (throws {@link ImageRefused}). `raw` and `iso` are never probed (seed 000: "every tool opens them with their format
 * stated"): they are opened read-only as a regular file and closed, no byte read, so a missing or unreadable file
 * throws (`Deno.errors.NotFound`, `PermissionDenied`…) and a symlink or a non-file is `malformed`, as for qcow2.
 */
export async function checkImage(path: string, format: ImageFormat): Promise<ImageCheck> {
  if (format !== "qcow2") {
    (await _openImage(path)).file.close();
    return { format, probed: false };
  }
  const header = parseQcow2Header(await readQcow2Prefix(path));
  checkQcow2Header(header);
  return { format, probed: true, header };
}
