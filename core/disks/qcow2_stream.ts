/**
 * A qcow2 image converted onto a disk WHILE it streams (`deploy.image` with `format: qcow2`, issue 19), by bcd's own
 * reader of QEMU's `docs/interop/qcow2.txt`: no tool ever opens the image, so nothing it names (a backing file, an
 * external data file) is ever followed.
 *
 * Order of checks: the header first — the first cluster is held back until it is whole, then parsed and held to the
 * base-image policy of `core/images/qcow2_header.ts` (version 2 or 3, cluster bits 9–21, no backing file, no external
 * data file, no encryption, no unknown incompatible feature); extended L2 entries are refused `unsupported-feature`; the virtual size must fit the disk (`too-large`) and the L1 table must be large enough for it
 * and at most 32 MiB (QEMU's own bound), all before one byte is written or the L1 table is allocated. Refcounts are
 * never read: which clusters hold data is what the active L1/L2 tables say, and nothing else is needed to convert.
 *
 * The stream arrives in file order but the tables point anywhere. How that is solved: every byte range the converter
 * needs (the L1 table, each L2 table, each data cluster) is a *want* registered the moment the table that names it is
 * read. A cluster that streams past is handed to the wants it overlaps; a cluster no want fully covers is *spooled*
 * (kept in memory) while a table that could still name it has not arrived, and the spool is dropped as soon as every
 * table is known. `qemu-img convert -O qcow2` writes each L2 table before the data it maps, so on its images the spool
 * holds only the refcount blocks; an image whose data arrives before its tables needs the spool, which is bounded
 * (`maxSpoolBytes`, 64 MiB by default), and so is the number of outstanding wants (`maxWants`); past either bound the
 * deploy fails `unsupported-layout` (re-make the image with `qemu-img convert -O qcow2`). Memory is therefore bounded by
 * the spool, the wants, one cluster and the L1 table (at most 32 MiB), never by the image's size.
 *
 * What reaches the disk: an allocated cluster's bytes at its guest offset; a compressed cluster (as `qemu-img
 * convert -c` writes them) decompressed to exactly one cluster — zlib's raw deflate, or with `compression_type=zstd`
 * the one zstd frame it holds (`zstd_frame.ts` finds its end; the bytes after it belong to the next cluster); a cluster with the zero flag, an unallocated cluster and
 * a whole unallocated L2 range written as zeros (there is no backing file to read through), so the disk reads as the
 * image does over its whole virtual size. Nothing past the virtual size is touched.
 *
 * Models: Ironic Python Agent downloads a qcow2 to a file and runs `qemu-img convert -O raw` onto the disk after its
 * own format and backing-file checks (the 2022 image-safety fix), which needs the whole image in RAM or on a scratch
 * disk and trusts qemu-img's parser; tink-worker's `image2disk` streams raw (optionally gz/xz) only. bcd streams like
 * tink-worker and converts qcow2 itself, so no file of the image exists and no tool reads it.
 *
 * Read-back verification: the digest the command carries is the SHA-256 of the qcow2 file as streamed, which no read
 * of the disk can reproduce. The converter instead keeps an order-independent record of what it wrote: the XOR of
 * SHA-256(guest cluster index ‖ bytes) over every cluster that is not all zeros; {@link Qcow2Converter.verify} reads
 * the whole virtual size back and recomputes it. (XOR of hashes guards against a disk that lost or changed writes, not
 * against an adversary, who already chose the image.)
 *
 * @module
 */
import { createHash } from "node:crypto";
import { inflateRawSync, zstdDecompressSync } from "node:zlib";
import {
  checkQcow2Header,
  INCOMPAT_EXTL2,
  MAX_CLUSTER_BITS,
  MIN_CLUSTER_BITS,
  parseQcow2Header,
  type Qcow2Header,
} from "../images/qcow2_header.ts";
import { ImageRefused } from "../images/errors.ts";
import type { DeployTarget, ImageSink } from "./deploy_target.ts";
import { decodeL1Entry, decodeL2Entry } from "./qcow2_entries.ts";
import { Qcow2ConvertError } from "./qcow2_errors.ts";
import { zstdFrameLength } from "./zstd_frame.ts";
import { coversRange, popWant, pushWant, type Want } from "./_want_heap.ts";

export { Qcow2ConvertError };

/** Bounds of the converter. */
export interface Qcow2ConvertOptions {
  /** Bytes of clusters kept because a table that may name them has not arrived (default 64 MiB). */
  readonly maxSpoolBytes?: number;
  /** Byte ranges asked for and not yet streamed past (default 262,144). */
  readonly maxWants?: number;
}

/** QEMU's bound on the L1 table (QCOW_MAX_L1_SIZE). */
export const MAX_L1_BYTES = 32 * 1024 * 1024;
const _ZERO_CHUNK = 4 * 1024 * 1024;

function _malformed(msg: string): Qcow2ConvertError {
  return new Qcow2ConvertError("malformed", `not a valid qcow2 image: ${msg}`);
}

/**
 * An {@link ImageSink} that converts the qcow2 bytes streamed into it onto `dev`. `touched` says whether anything was
 * written; after `end()`, {@link verify} reads the disk back.
 */
export class Qcow2Converter implements ImageSink {
  readonly #dev: DeployTarget;
  readonly #maxSpool: number;
  readonly #maxWants: number;
  #head: Uint8Array = new Uint8Array(0);
  #header: Qcow2Header | undefined;
  #cs = 0;
  #cur: Uint8Array = new Uint8Array(0);
  #fill = 0;
  #cluster = 0;
  #pos = 0;
  #heap: Want[] = [];
  readonly #spool = new Map<number, Uint8Array>();
  #spoolBytes = 0;
  #l1Done = false;
  #tablesOutstanding = 0;
  #touched = false;
  #zeros: Uint8Array | undefined;
  readonly #acc = new Uint8Array(32);
  #ended = false;

  constructor(dev: DeployTarget, o: Qcow2ConvertOptions = {}) {
    this.#dev = dev;
    this.#maxSpool = o.maxSpoolBytes ?? 64 * 1024 * 1024;
    this.#maxWants = o.maxWants ?? 262_144;
  }

  /** Whether a byte has been written to the disk. */
  get touched(): boolean {
    return this.#touched;
  }

  /** The image's virtual size (what the disk now holds), once the header was read. */
  get virtualSize(): number {
    return Number(this.#header?.virtualSize ?? 0n);
  }

  async write(chunk: Uint8Array): Promise<void> {
    let at = 0;
    if (this.#header === undefined) {
      at = this.#takeHead(chunk);
      if (this.#header === undefined) return;
      await this.#headerCluster();
    }
    while (at < chunk.length) {
      const n = Math.min(this.#cs - this.#fill, chunk.length - at);
      this.#cur.set(chunk.subarray(at, at + n), this.#fill);
      this.#fill += n;
      at += n;
      if (this.#fill === this.#cs) await this.#nextCluster();
    }
  }

  async end(): Promise<void> {
    if (this.#header === undefined) {
      this.#parseHeader(this.#head);
      if (this.#header === undefined) throw _malformed("the stream ended inside the header");
      await this.#headerCluster();
    }
    if (this.#fill > 0) {
      // The file may end inside its last cluster (compressed data does): it reads as zeros past the end, as in QEMU.
      this.#cur.fill(0, this.#fill);
      await this.#nextCluster();
    }
    this.#ended = true;
    const left = this.#heap.filter((w) => w.next < w.end);
    const table = left.find((w) => w.table);
    if (table) throw _malformed(`a table at offset ${table.start} lies past the end of the image (${this.#pos} bytes)`);
    if (left.length > 0) {
      throw _malformed(`${left.length} data clusters lie past the end of the image (first at ${left[0]!.start})`);
    }
    if (!this.#l1Done) throw _malformed("the L1 table lies past the end of the image");
  }

  /**
   * Reads the virtual size back from `dev` and compares it with the record of what was written; true when they
   * agree. Only after {@link end}.
   */
  async verify(): Promise<boolean> {
    if (!this.#ended) throw new TypeError("Qcow2Converter.verify: the stream has not ended");
    const acc = new Uint8Array(32);
    const size = this.virtualSize;
    const step = Math.max(this.#cs, Math.floor(_ZERO_CHUNK / this.#cs) * this.#cs);
    for (let off = 0; off < size; off += step) {
      const bytes = await this.#dev.read(off, Math.min(step, size - off));
      for (let c = 0; c < bytes.length; c += this.#cs) {
        _fold(acc, (off + c) / this.#cs, bytes.subarray(c, Math.min(c + this.#cs, bytes.length)));
      }
    }
    return acc.every((b, i) => b === this.#acc[i]);
  }

  /** Takes header bytes until the first cluster is whole; returns how much of `chunk` it took. */
  #takeHead(chunk: Uint8Array): number {
    let took = 0;
    while (took < chunk.length) {
      const target = this.#head.length < 24 ? 24 : this.#headTarget();
      const n = Math.min(target - this.#head.length, chunk.length - took);
      const head = new Uint8Array(this.#head.length + n);
      head.set(this.#head);
      head.set(chunk.subarray(took, took + n), this.#head.length);
      this.#head = head;
      took += n;
      if (head.length >= 24 && head.length >= this.#headTarget()) {
        this.#parseHeader(head);
        break;
      }
    }
    return took;
  }

  /** The first cluster's size as bytes 20..24 state it (the header parse refuses a bad one). */
  #headTarget(): number {
    const bits = new DataView(this.#head.buffer, this.#head.byteOffset, 24).getUint32(20);
    return bits < MIN_CLUSTER_BITS || bits > MAX_CLUSTER_BITS ? 24 : 1 << bits;
  }

  /** Where the L1 table is, once the header was read; asked for when the header cluster is processed. */
  #l1: { offset: number; entries: number } | undefined;

  #parseHeader(prefix: Uint8Array): void {
    let h: Qcow2Header;
    try {
      h = parseQcow2Header(prefix);
      checkQcow2Header(h);
    } catch (e) {
      if (e instanceof ImageRefused) throw new Qcow2ConvertError(e.reason, e.message, { cause: e });
      throw e;
    }
    if ((h.incompatible & INCOMPAT_EXTL2) !== 0n) {
      throw new Qcow2ConvertError("unsupported-feature", "the image uses extended L2 entries (subclusters)");
    }
    const cs = 1 << h.clusterBits;
    if (prefix.length < cs) throw _malformed(`the stream ended inside the first cluster (${prefix.length} bytes)`);
    const dv = new DataView(prefix.buffer, prefix.byteOffset, prefix.byteLength);
    const l1Size = dv.getUint32(36);
    const l1Offset = dv.getBigUint64(40);
    if (h.virtualSize % 512n !== 0n) throw _malformed(`virtual size ${h.virtualSize} is not a multiple of 512`);
    if (h.virtualSize > BigInt(this.#dev.sizeBytes)) {
      throw new Qcow2ConvertError(
        "too-large",
        `the image's virtual size ${h.virtualSize} exceeds the disk's ${this.#dev.sizeBytes} bytes`,
      );
    }
    const perL2 = BigInt(cs / 8) * BigInt(cs);
    const needed = Number((h.virtualSize + perL2 - 1n) / perL2);
    if (l1Size < needed) throw _malformed(`l1_size ${l1Size} cannot map ${h.virtualSize} bytes (needs ${needed})`);
    if (l1Size * 8 > MAX_L1_BYTES) throw _malformed(`l1_size ${l1Size} exceeds QEMU's bound of ${MAX_L1_BYTES / 8}`);
    if (needed > 0 && (l1Offset === 0n || l1Offset % BigInt(cs) !== 0n || l1Offset > BigInt(Number.MAX_SAFE_INTEGER))) {
      throw _malformed(`l1_table_offset ${l1Offset} is not a cluster of the file`);
    }
    this.#header = h;
    this.#cs = cs;
    this.#cur = new Uint8Array(cs);
    this.#cur.set(prefix.subarray(0, cs));
    this.#fill = cs;
    this.#pos = 0;
    if (needed === 0) {
      this.#l1Done = true;
      return;
    }
    this.#l1 = { offset: Number(l1Offset), entries: needed };
  }

  /** Asks for the L1 table, then hands the header cluster on like any other (nothing may point into it). */
  async #headerCluster(): Promise<void> {
    if (this.#l1) {
      const { offset, entries } = this.#l1;
      await this.#want(offset, entries * 8, true, (b) => this.#readL1(b, entries));
    }
    await this.#nextCluster();
  }

  async #nextCluster(): Promise<void> {
    const c = this.#cluster;
    const cStart = c * this.#cs;
    const cEnd = cStart + this.#cs;
    const bytes = this.#cur;
    this.#pos = cStart;
    const covered: [number, number][] = [];
    const carry: Want[] = [];
    for (;;) {
      const w = this.#heap[0];
      if (w === undefined || w.next >= cEnd) break;
      popWant(this.#heap);
      const lo = w.next;
      const hi = Math.min(w.end, cEnd);
      covered.push([lo, hi]);
      w.next = hi;
      if (w.buf === undefined && lo === w.start && hi === w.end) {
        await this.#finish(w, bytes.subarray(lo - cStart, hi - cStart));
        continue;
      }
      w.buf ??= new Uint8Array(w.end - w.start);
      w.buf.set(bytes.subarray(lo - cStart, hi - cStart), lo - w.start);
      if (hi === w.end) await this.#finish(w, w.buf);
      else carry.push(w);
    }
    for (const w of carry) pushWant(this.#heap, w);
    this.#pos = cEnd;
    if (c !== 0 && this.#moreTables() && !coversRange(covered, cStart, cEnd)) {
      this.#spool.set(c, bytes.slice());
      this.#spoolBytes += this.#cs;
      if (this.#spoolBytes > this.#maxSpool) {
        throw new Qcow2ConvertError(
          "unsupported-layout",
          `more than ${this.#maxSpool} bytes of the image arrived before the tables that place them ` +
            "(an image written by qemu-img convert -O qcow2 places its tables first)",
        );
      }
    }
    this.#cluster = c + 1;
    this.#fill = 0;
  }

  async #finish(w: Want, bytes: Uint8Array): Promise<void> {
    await w.done(bytes);
    // Counted down only once the table's own wants are registered: until then the spool must stay.
    if (w.table) this.#tablesOutstanding--;
    if (!this.#moreTables() && this.#spool.size > 0) {
      this.#spool.clear();
      this.#spoolBytes = 0;
    }
  }

  #moreTables(): boolean {
    return !this.#l1Done || this.#tablesOutstanding > 0;
  }

  /**
   * Asks for `[start, start+length)`; bytes already streamed past come from the spool, and a range the spool holds
   * whole is handed over at once.
   */
  async #want(start: number, length: number, table: boolean, done: (bytes: Uint8Array) => Promise<void>) {
    const end = start + length;
    if (start < this.#cs) throw _malformed(`offset ${start} points into the header cluster`);
    const w: Want = { start, end, next: start, buf: undefined, table, done };
    if (table) this.#tablesOutstanding++;
    if (start < this.#pos) {
      w.buf = new Uint8Array(length);
      const upto = Math.min(end, this.#pos);
      for (let c = Math.floor(start / this.#cs); c * this.#cs < upto; c++) {
        const kept = this.#spool.get(c);
        if (kept === undefined) {
          throw new Qcow2ConvertError(
            "unsupported-layout",
            `a table names offset ${start}, which streamed past before the table and was not kept`,
          );
        }
        const cStart = c * this.#cs;
        const lo = Math.max(start, cStart);
        const hi = Math.min(upto, cStart + this.#cs);
        w.buf.set(kept.subarray(lo - cStart, hi - cStart), lo - start);
      }
      w.next = upto;
      if (upto === end) return await this.#finish(w, w.buf);
    }
    if (this.#heap.length >= this.#maxWants) {
      throw new Qcow2ConvertError(
        "unsupported-layout",
        `more than ${this.#maxWants} ranges of the image are named before they stream`,
      );
    }
    pushWant(this.#heap, w);
  }

  async #readL1(b: Uint8Array, entries: number): Promise<void> {
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const perL2 = this.#cs / 8;
    for (let i = 0; i < entries; i++) {
      const l2 = decodeL1Entry(dv.getBigUint64(i * 8), this.#header!.clusterBits, i);
      const guest = i * perL2;
      if (l2 === null) await this.#zero(guest, perL2);
      else await this.#want(l2, this.#cs, true, (t) => this.#readL2(t, guest));
    }
    this.#l1Done = true;
  }

  /** Hands each entry's cluster on: data and compressed clusters asked for, runs of zero clusters written as zeros. */
  async #readL2(b: Uint8Array, firstGuest: number): Promise<void> {
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const { version, clusterBits } = this.#header!;
    const n = Math.min(this.#cs / 8, Math.ceil(this.virtualSize / this.#cs) - firstGuest);
    let zeroFrom = -1;
    for (let i = 0; i < n; i++) {
      const g = firstGuest + i;
      const e = decodeL2Entry(dv.getBigUint64(i * 8), version, clusterBits, g);
      if (e.kind === "zero") {
        if (zeroFrom < 0) zeroFrom = g;
        continue;
      }
      if (zeroFrom >= 0) await this.#zero(zeroFrom, g - zeroFrom);
      zeroFrom = -1;
      if (e.kind === "data") await this.#want(e.offset, this.#cs, false, (d) => this.#put(g, d));
      else await this.#want(e.offset, e.size, false, (z) => this.#putCompressed(g, z));
    }
    if (zeroFrom >= 0) await this.#zero(zeroFrom, firstGuest + n - zeroFrom);
  }

  /** A compressed cluster: zlib's raw deflate, or one zstd frame (the header's compression type), to one cluster. */
  async #putCompressed(g: number, z: Uint8Array): Promise<void> {
    let out: Uint8Array;
    const zstd = this.#header!.compressionType === 1;
    try {
      if (zstd) {
        const n = zstdFrameLength(z);
        if (n === undefined) throw new Error("no whole zstd frame");
        out = zstdDecompressSync(z.subarray(0, n), { maxOutputLength: this.#cs });
      } else out = inflateRawSync(z, { maxOutputLength: this.#cs, finishFlush: 2 /* Z_SYNC_FLUSH */ });
    } catch (e) {
      throw _malformed(`compressed guest cluster ${g} does not decompress to one cluster: ${(e as Error).message}`);
    }
    if (out.length !== this.#cs) {
      throw _malformed(`compressed guest cluster ${g} decompresses to ${out.length} bytes, not ${this.#cs}`);
    }
    await this.#put(g, out);
  }

  async #put(g: number, bytes: Uint8Array): Promise<void> {
    const off = g * this.#cs;
    const data = bytes.subarray(0, Math.min(this.#cs, this.virtualSize - off));
    this.#touched = true;
    await this.#dev.write(off, data);
    _fold(this.#acc, g, data);
  }

  /** Writes zeros over `count` guest clusters from `g` (clipped at the virtual size). */
  async #zero(g: number, count: number): Promise<void> {
    const from = g * this.#cs;
    const to = Math.min((g + count) * this.#cs, this.virtualSize);
    if (to <= from) return;
    this.#touched = true;
    if (this.#dev.zeroRange) return await this.#dev.zeroRange(from, to - from);
    this.#zeros ??= new Uint8Array(_ZERO_CHUNK);
    for (let off = from; off < to; off += _ZERO_CHUNK) {
      await this.#dev.write(off, this.#zeros.subarray(0, Math.min(_ZERO_CHUNK, to - off)));
    }
  }
}

/** XORs SHA-256(index ‖ bytes) into `acc` unless `bytes` are all zeros. */
function _fold(acc: Uint8Array, index: number, bytes: Uint8Array): void {
  if (bytes.every((b) => b === 0)) return;
  const idx = new Uint8Array(8);
  new DataView(idx.buffer).setBigUint64(0, BigInt(index));
  const h = createHash("sha256").update(idx).update(bytes).digest();
  for (let i = 0; i < 32; i++) acc[i]! ^= h[i]!;
}
