/**
 * The MACs of the framing's channel gate (`attach.ts`; issue 21, seed 002 has none), keyed with the VM's one per-VM
 * secret (the launch capability, which is also the turn protocol's channel key, `core/turns/auth.ts`).
 *
 * MAC = HMAC-SHA256(key, "bcd-framing-v1|<side>|<host nonce hex>|<guest nonce hex>"), compared in constant time.
 * Both nonces are fresh per handshake, so neither side's MAC can be replayed on another attachment.
 *
 * @module
 */
import { bytesEqual } from "../pki/ed25519.ts";
import { hexOf, hmacSha256Sync } from "../util/sha256.ts";

/** The size of the guest's nonce and of a MAC. */
export const FRAMING_AUTH_BYTES = 32;

/** The MAC `side` sends over the two nonces. */
export function framingProof(
  key: Uint8Array,
  side: "host" | "guest",
  hostNonce: Uint8Array,
  guestNonce: Uint8Array,
): Uint8Array {
  return hmacSha256Sync(key, `bcd-framing-v1|${side}|${hexOf(hostNonce)}|${hexOf(guestNonce)}`);
}

/** Whether `mac` is `side`'s MAC over the nonces, compared in constant time. */
export function verifyFramingProof(
  key: Uint8Array,
  side: "host" | "guest",
  hostNonce: Uint8Array,
  guestNonce: Uint8Array,
  mac: Uint8Array,
): boolean {
  if (mac.length !== FRAMING_AUTH_BYTES || guestNonce.length !== FRAMING_AUTH_BYTES) return false;
  return bytesEqual(framingProof(key, side, hostNonce, guestNonce), mac);
}
