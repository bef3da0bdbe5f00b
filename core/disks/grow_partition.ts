/**
 * `deploy.image`'s optional root growth (`grow_root`, issue 19): the deployed image's last partition grown to fill the
 * disk, by bcd's own partition-table rewrite (no tool: the image's table is read through the same disk handle that
 * wrote it, so no kernel name or path is involved). The filesystem inside is grown by root afterwards
 * (`runtimes/disks/grow_fs.ts`).
 *
 * - **GPT** (UEFI 2.10 §5.3): the primary header at LBA 1 and its entry array are read and their CRC32s checked
 *   (`partition-table` otherwise); the backup entry array and header move to the disk's end (the image's backup sat
 *   at the image's end, now mid-disk, and is zeroed), the last usable LBA follows, the partition with the highest
 *   last LBA ends at the new last usable LBA rounded down to a 1 MiB boundary (or where an added config-drive
 *   partition starts), both CRC32s are recomputed and the protective MBR's size follows. Written backup first, primary
 *   last, so a torn write leaves the image's own primary intact.
 * - **MBR** (dos): the primary entry that starts last is grown to the disk's end (at most 2^32 sectors); an extended
 *   partition last is refused `unsupported-table` (its logical partitions would need a chain rewrite).
 * - **A config drive partition** (`tailBytes`): added in the first free entry, 1 MiB aligned, at the disk's end (GPT:
 *   type "basic data", name `cidata`; dos: type 0x0c), after the grown partition; a table with no free entry, or a
 *   last partition that reaches into that space when it is not grown, is `no-room`.
 *
 * Models: cloud-utils' `growpart` (which runs `sgdisk`/`sfdisk`, moves the GPT backup, grows the last or a named
 * partition) and Ironic Python Agent, which leaves growth to cloud-init in the instance; tink-worker's hub has a
 * `growpart` action. bcd grows only the last partition: growing another would need to move what follows it.
 *
 * 512-byte logical sectors: an image written for 512-byte sectors (every qcow2/raw cloud image) puts its GPT header at
 * byte 512; a disk without one there is refused `no-partition-table`.
 *
 * @module
 */
import { crc32 } from "node:zlib";
import type { DeployTarget } from "./deploy_target.ts";

/** Why the table could not be grown: `no-partition-table`, `partition-table`, `unsupported-table`, `no-room`. */
export class GrowError extends Error {
  override name = "GrowError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** What the growth did. */
export interface PartitionGrowth {
  readonly table: "gpt" | "dos";
  /** 1-based number of the grown partition (as the kernel names it: `sda<N>`, `nvme0n1p<N>`). */
  readonly partition: number;
  readonly startSector: number;
  readonly oldSectors: number;
  readonly newSectors: number;
}

/** A partition added at the disk's end (the config drive): GPT "basic data" named `cidata`, or dos type 0x0c. */
export interface AddedPartition {
  readonly table: "gpt" | "dos";
  readonly partition: number;
  readonly startSector: number;
  readonly sectors: number;
}

/** What {@link rewritePartitions} does: grow the last partition, add one of `tailBytes` at the end, or both. */
export interface RewriteOptions {
  readonly growLast?: boolean;
  /** A partition of this many bytes (a multiple of 1 MiB) added at the disk's end, after the grown one. */
  readonly tailBytes?: number;
}

/** What {@link rewritePartitions} did. */
export interface RewriteOutcome {
  readonly grown?: PartitionGrowth;
  readonly added?: AddedPartition;
}

const _S = 512;
const _ALIGN = 2048; // 1 MiB in sectors
const _MAX_ENTRY_BYTES = 1024 * 1024;
const _EXTENDED = new Set([0x05, 0x0f, 0x85]);
/** EBD0A0A2-B9E5-4433-87C0-68B6B72699C7 (basic data), as GPT stores it (first three fields little-endian). */
const _BASIC_DATA = new Uint8Array([
  0xa2,
  0xa0,
  0xd0,
  0xeb,
  0xe5,
  0xb9,
  0x33,
  0x44,
  0x87,
  0xc0,
  0x68,
  0xb6,
  0xb7,
  0x26,
  0x99,
  0xc7,
]);

/** Grows the last partition of the table on `dev` to fill it. Returns what it did; throws {@link GrowError}. */
export async function growLastPartition(dev: DeployTarget): Promise<PartitionGrowth> {
  return (await rewritePartitions(dev, { growLast: true })).grown!;
}

/**
 * Rewrites the table on `dev`: the last partition grown to the disk's end (or to the added one), a partition of
 * `tailBytes` added at the end. Nothing is written before every check passed; throws {@link GrowError}.
 */
export async function rewritePartitions(dev: DeployTarget, o: RewriteOptions): Promise<RewriteOutcome> {
  const tail = Math.ceil((o.tailBytes ?? 0) / (_S * _ALIGN)) * _ALIGN;
  const n = Math.floor(dev.sizeBytes / _S);
  const mbr = await dev.read(0, _S);
  if (mbr[510] !== 0x55 || mbr[511] !== 0xaa) throw new GrowError("no-partition-table", "no MBR signature at byte 510");
  const types = [0, 1, 2, 3].map((i) => mbr[446 + i * 16 + 4]!);
  if (types.includes(0xee)) return await _gpt(dev, n, tail, o.growLast === true, mbr);
  return await _dos(dev, n, tail, o.growLast === true, mbr, types);
}

async function _dos(
  dev: DeployTarget,
  n: number,
  tail: number,
  grow: boolean,
  mbr: Uint8Array,
  types: number[],
): Promise<RewriteOutcome> {
  const dv = new DataView(mbr.buffer);
  let last = -1;
  for (let i = 0; i < 4; i++) {
    if (types[i] === 0) continue;
    if (last < 0 || dv.getUint32(446 + i * 16 + 8, true) > dv.getUint32(446 + last * 16 + 8, true)) last = i;
  }
  if (last < 0) throw new GrowError("no-partition-table", "the MBR lists no partition");
  if (grow && _EXTENDED.has(types[last]!)) {
    throw new GrowError("unsupported-table", `the last MBR partition (${last + 1}) is extended; its logical ones stay`);
  }
  const at = 446 + last * 16;
  const start = dv.getUint32(at + 8, true);
  const old = dv.getUint32(at + 12, true);
  const tailStart = Math.floor(Math.min(n, 2 ** 32) / _ALIGN) * _ALIGN - tail;
  const out: { grown?: PartitionGrowth; added?: AddedPartition } = {};
  if (grow) {
    const size = tailStart - start;
    if (size < old) throw new GrowError("no-room", `partition ${last + 1} would shrink from ${old} to ${size} sectors`);
    dv.setUint32(at + 12, size, true);
    out.grown = { table: "dos", partition: last + 1, startSector: start, oldSectors: old, newSectors: size };
  } else if (tail > 0 && start + old > tailStart) {
    throw new GrowError(
      "no-room",
      `partition ${last + 1} ends at ${start + old}, past the config drive's ${tailStart}`,
    );
  }
  if (tail > 0) {
    const free = types.indexOf(0);
    if (free < 0) throw new GrowError("no-room", "the MBR has no free primary entry for the config drive");
    const e = 446 + free * 16;
    mbr.set([0x00, 0xfe, 0xff, 0xff, 0x0c, 0xfe, 0xff, 0xff], e); // LBA-only CHS; FAT32 (LBA)
    dv.setUint32(e + 8, tailStart, true);
    dv.setUint32(e + 12, tail, true);
    out.added = { table: "dos", partition: free + 1, startSector: tailStart, sectors: tail };
  }
  await dev.write(0, mbr);
  await dev.flush();
  return out;
}

async function _gpt(
  dev: DeployTarget,
  n: number,
  tail: number,
  grow: boolean,
  mbr: Uint8Array,
): Promise<RewriteOutcome> {
  const h = await dev.read(_S, _S);
  const hv = new DataView(h.buffer);
  if (new TextDecoder().decode(h.subarray(0, 8)) !== "EFI PART") {
    throw new GrowError("no-partition-table", "a protective MBR but no GPT header at LBA 1");
  }
  const hsize = hv.getUint32(12, true);
  if (hsize < 92 || hsize > _S) throw new GrowError("partition-table", `GPT header size ${hsize}`);
  const want = hv.getUint32(16, true);
  hv.setUint32(16, 0, true);
  if (crc32(h.subarray(0, hsize)) !== want) throw new GrowError("partition-table", "the GPT header's CRC32 is wrong");
  const oldBackup = Number(hv.getBigUint64(32, true));
  const entriesLba = Number(hv.getBigUint64(72, true));
  const count = hv.getUint32(80, true);
  const esize = hv.getUint32(84, true);
  if (esize < 128 || esize % 8 !== 0 || count * esize > _MAX_ENTRY_BYTES || count === 0) {
    throw new GrowError("partition-table", `GPT entry array of ${count} × ${esize} bytes`);
  }
  const esectors = Math.ceil((count * esize) / _S);
  if (entriesLba < 2 || entriesLba + esectors >= n) {
    throw new GrowError("partition-table", `entries at LBA ${entriesLba}`);
  }
  const raw = await dev.read(entriesLba * _S, esectors * _S);
  const entries = raw.subarray(0, count * esize);
  if (crc32(entries) !== hv.getUint32(88, true)) {
    throw new GrowError("partition-table", "the GPT entry array's CRC32 is wrong");
  }
  const ev = new DataView(entries.buffer, entries.byteOffset, entries.byteLength);
  const empty = (i: number) => entries.subarray(i * esize, i * esize + 16).every((b) => b === 0);
  let last = -1;
  for (let i = 0; i < count; i++) {
    if (empty(i)) continue;
    if (last < 0 || ev.getBigUint64(i * esize + 40, true) > ev.getBigUint64(last * esize + 40, true)) last = i;
  }
  if (last < 0) throw new GrowError("no-partition-table", "the GPT lists no partition");
  const backupEntries = n - 1 - esectors;
  const lastUsable = backupEntries - 1;
  const tailStart = Math.floor((lastUsable + 1) / _ALIGN) * _ALIGN - tail;
  const start = Number(ev.getBigUint64(last * esize + 32, true));
  const oldEnd = Number(ev.getBigUint64(last * esize + 40, true));
  const out: { grown?: PartitionGrowth; added?: AddedPartition } = {};
  if (grow) {
    const newEnd = tailStart - 1;
    if (newEnd < oldEnd) {
      throw new GrowError(
        "no-room",
        `partition ${last + 1} ends at LBA ${oldEnd}; the disk leaves room up to ${newEnd}`,
      );
    }
    ev.setBigUint64(last * esize + 40, BigInt(newEnd), true);
    out.grown = {
      table: "gpt",
      partition: last + 1,
      startSector: start,
      oldSectors: oldEnd - start + 1,
      newSectors: newEnd - start + 1,
    };
  } else if (tail > 0 && oldEnd >= tailStart) {
    throw new GrowError("no-room", `partition ${last + 1} ends at LBA ${oldEnd}, past the config drive's ${tailStart}`);
  }
  if (tail > 0) {
    let free = -1;
    for (let i = 0; i < count && free < 0; i++) if (empty(i)) free = i;
    if (free < 0) throw new GrowError("no-room", "the GPT has no free entry for the config drive");
    const e = free * esize;
    entries.fill(0, e, e + esize);
    entries.set(_BASIC_DATA, e);
    const guid = crypto.getRandomValues(new Uint8Array(16));
    guid[7] = (guid[7]! & 0x0f) | 0x40; // version 4 (the third field is little-endian)
    guid[8] = (guid[8]! & 0x3f) | 0x80;
    entries.set(guid, e + 16);
    ev.setBigUint64(e + 32, BigInt(tailStart), true);
    ev.setBigUint64(e + 40, BigInt(tailStart + tail - 1), true);
    const name = "cidata";
    for (let i = 0; i < name.length; i++) ev.setUint16(e + 56 + i * 2, name.charCodeAt(i), true);
    out.added = { table: "gpt", partition: free + 1, startSector: tailStart, sectors: tail };
  }
  const ecrc = crc32(entries);
  const header = (my: number, alt: number, at: number): Uint8Array => {
    const b = h.slice();
    const v = new DataView(b.buffer);
    v.setBigUint64(24, BigInt(my), true);
    v.setBigUint64(32, BigInt(alt), true);
    v.setBigUint64(48, BigInt(lastUsable), true);
    v.setBigUint64(72, BigInt(at), true);
    v.setUint32(88, ecrc, true);
    v.setUint32(16, 0, true);
    v.setUint32(16, crc32(b.subarray(0, hsize)), true);
    return b;
  };
  const padded = new Uint8Array(esectors * _S);
  padded.set(entries);
  if (oldBackup > 1 && oldBackup < n - 1) await dev.write(oldBackup * _S, new Uint8Array(_S)); // the stale backup
  await dev.write(backupEntries * _S, padded);
  await dev.write((n - 1) * _S, header(n - 1, 1, backupEntries));
  await dev.flush();
  await dev.write(entriesLba * _S, padded);
  await dev.write(_S, header(1, n - 1, entriesLba));
  const mv = new DataView(mbr.buffer);
  for (let i = 0; i < 4; i++) {
    if (mbr[446 + i * 16 + 4] === 0xee) mv.setUint32(446 + i * 16 + 12, Math.min(n - 1, 0xffffffff), true);
  }
  await dev.write(0, mbr);
  await dev.flush();
  return out;
}
