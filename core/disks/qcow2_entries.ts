/**
 * The qcow2 table entries, decoded as `docs/interop/qcow2.txt` lays them out (§Cluster mapping): an L1 entry names an
 * L2 table or none; an L2 entry is a standard cluster descriptor (an allocated cluster, the all-zeros flag of version 3,
 * or unallocated) or a compressed cluster descriptor (`x = 62 - (cluster_bits - 8)`: host offset in bits 0..x-1, the
 * number of additional 512-byte sectors in bits x..61). Reserved bits set, an offset not aligned to a cluster or past
 * what a number holds exactly are `malformed`. The copied flag (bit 63) is ignored: refcounts are never read.
 *
 * @module
 */
import { Qcow2ConvertError } from "./qcow2_errors.ts";

/** What one L2 entry says about its guest cluster. */
export type L2Entry =
  | { readonly kind: "zero" }
  | { readonly kind: "data"; readonly offset: number }
  | { readonly kind: "compressed"; readonly offset: number; readonly size: number };

const _OFFSET_MASK = 0x00fffffffffffe00n;
const _L1_RESERVED = 0x7f000000000001ffn;
const _L2_STD_RESERVED = 0x3f000000000001fen;
const _COPIED = 1n << 63n;
const _COMPRESSED = 1n << 62n;
const _MAX_OFFSET = BigInt(Number.MAX_SAFE_INTEGER);

function _malformed(msg: string): Qcow2ConvertError {
  return new Qcow2ConvertError("malformed", `not a valid qcow2 image: ${msg}`);
}

function _clusterOffset(off: bigint, clusterBits: number, what: string): number {
  if (off % (1n << BigInt(clusterBits)) !== 0n || off > _MAX_OFFSET) {
    throw _malformed(`${what}: offset ${off} is not a cluster of the file`);
  }
  return Number(off);
}

/** The L2 table an L1 entry names (its offset in the file), or `null` for none (the range reads as zeros). */
export function decodeL1Entry(e: bigint, clusterBits: number, index: number): number | null {
  if ((e & _L1_RESERVED) !== 0n) throw _malformed(`L1 entry ${index} sets reserved bits (0x${e.toString(16)})`);
  const off = e & _OFFSET_MASK;
  return off === 0n ? null : _clusterOffset(off, clusterBits, `L1 entry ${index}`);
}

/** One L2 entry of an image of `version` and `clusterBits`, for guest cluster `guest` (named in errors). */
export function decodeL2Entry(raw: bigint, version: 2 | 3, clusterBits: number, guest: number): L2Entry {
  const e = raw & ~_COPIED;
  if ((e & _COMPRESSED) !== 0n) {
    const x = 62n - BigInt(clusterBits - 8);
    const offset = Number(e & ((1n << x) - 1n));
    const sectors = Number((e & ~_COMPRESSED) >> x) + 1;
    return { kind: "compressed", offset, size: sectors * 512 - (offset & 511) };
  }
  // Version 2 has no all-zeros flag: bit 0 is reserved there.
  const reserved = e & (version === 2 ? _L2_STD_RESERVED | 1n : _L2_STD_RESERVED);
  if (reserved !== 0n) throw _malformed(`L2 entry for guest cluster ${guest} sets reserved bits (0x${e.toString(16)})`);
  const off = e & _OFFSET_MASK;
  if ((e & 1n) !== 0n || off === 0n) return { kind: "zero" };
  return { kind: "data", offset: _clusterOffset(off, clusterBits, `L2 entry for guest cluster ${guest}`) };
}
