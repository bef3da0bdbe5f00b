/**
 * Channel authentication of the control framing (issue 21; seed 002 has none), with the same per-VM channel key as
 * the turn protocol (`core/turns/auth.ts`). On a channel whose guest holds a key, the host's first message after
 * its re-sync Echo is AuthHello (its nonce); the guest answers AuthChallenge (its nonce and its MAC, proving the
 * key to the host); the host sends AuthProof (its MAC). Until a valid AuthProof the guest answers Ping and Echo
 * (the re-sync needs them) and nothing else: any other kind ends the session, and so does a bad proof. Each new
 * epoch (a transport reset) starts unauthenticated again.
 *
 * MAC = HMAC-SHA256(key, "bcd-framing-v1|<side>|<host nonce hex>|<guest nonce hex>"), compared in constant time.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHmac, timingSafeEqual } from "node:crypto";

/** The size of a nonce and of a MAC. */
export const FRAMING_AUTH_BYTES = 32;

/** The MAC `side` sends over the two nonces. */
export function framingProof(
  key: Uint8Array,
  side: "host" | "guest",
  hostNonce: Uint8Array,
  guestNonce: Uint8Array,
): Uint8Array {
  const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
  return new Uint8Array(
    createHmac("sha256", key).update(`bcd-framing-v1|${side}|${hex(hostNonce)}|${hex(guestNonce)}`).digest(),
  );
}

/** Whether `mac` is `side`'s MAC over the nonces, compared in constant time. */
export function verifyFramingProof(
  key: Uint8Array,
  side: "host" | "guest",
  hostNonce: Uint8Array,
  guestNonce: Uint8Array,
  mac: Uint8Array,
): boolean {
  if (mac.length !== FRAMING_AUTH_BYTES || hostNonce.length !== FRAMING_AUTH_BYTES) return false;
  return timingSafeEqual(framingProof(key, side, hostNonce, guestNonce), mac);
}
