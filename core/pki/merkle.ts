/**
 * The Merkle tree over a destructive batch's `(subject, kind)` leaves (RFC 9162 §2.1 hashing: leaves prefixed 0x00,
 * interior nodes 0x01, so a leaf can never pose as an interior node). A batch's scope names the root and the size;
 * each command's `batch_proof` is the inclusion path of its own leaf.
 *
 * @module
 */
import { bytesEqual, sha256 } from "./ed25519.ts";

/** The most leaves a batch may hold, and so the longest path accepted. */
export const MAX_BATCH_LEAVES = 2 ** 32;
export const MAX_PROOF_HASHES = 32;

/** The leaf hash of `(subject, kind)`: SHA-256(0x00 ‖ u16 len ‖ subject ‖ u16 len ‖ kind), UTF-8, big-endian. */
export async function leafHash(subject: string, kind: string): Promise<Uint8Array> {
  const enc = new TextEncoder();
  const s = enc.encode(subject);
  const k = enc.encode(kind);
  if (s.length > 0xffff || k.length > 0xffff) throw new RangeError("subject or kind too long for a batch leaf");
  const buf = new Uint8Array(1 + 2 + s.length + 2 + k.length);
  const dv = new DataView(buf.buffer);
  buf[0] = 0x00;
  dv.setUint16(1, s.length);
  buf.set(s, 3);
  dv.setUint16(3 + s.length, k.length);
  buf.set(k, 5 + s.length);
  return await sha256(buf);
}

async function _node(left: Uint8Array, right: Uint8Array): Promise<Uint8Array> {
  const buf = new Uint8Array(1 + left.length + right.length);
  buf[0] = 0x01;
  buf.set(left, 1);
  buf.set(right, 1 + left.length);
  return await sha256(buf);
}

function _split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The Merkle tree hash of `leaves` (already leaf-hashed); throws on an empty list. */
export async function merkleRoot(leaves: readonly Uint8Array[]): Promise<Uint8Array> {
  if (leaves.length === 0) throw new RangeError("a batch has at least one leaf");
  if (leaves.length === 1) return leaves[0]!;
  const k = _split(leaves.length);
  return await _node(await merkleRoot(leaves.slice(0, k)), await merkleRoot(leaves.slice(k)));
}

/** The inclusion path of leaf `index` (RFC 9162 PATH). */
export async function inclusionProof(leaves: readonly Uint8Array[], index: number): Promise<Uint8Array[]> {
  if (!Number.isInteger(index) || index < 0 || index >= leaves.length) throw new RangeError(`leaf index ${index}`);
  if (leaves.length === 1) return [];
  const k = _split(leaves.length);
  if (index < k) return [...await inclusionProof(leaves.slice(0, k), index), await merkleRoot(leaves.slice(k))];
  return [...await inclusionProof(leaves.slice(k), index - k), await merkleRoot(leaves.slice(0, k))];
}

/** Verifies that `leaf` sits at `index` of a tree of `size` leaves with `root` (RFC 9162 §2.1.3.2). */
export async function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  size: number,
  path: readonly Uint8Array[],
  root: Uint8Array,
): Promise<boolean> {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || size < 1 || size > MAX_BATCH_LEAVES) return false;
  if (index < 0 || index >= size || path.length > MAX_PROOF_HASHES) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (p.length !== 32 || sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = await _node(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = await _node(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && bytesEqual(r, root);
}
