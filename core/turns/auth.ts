/**
 * Channel authentication of the turn protocol (issue 21; seed 001 has none): every VM has a 32-byte channel key
 * that the host generates and delivers out of band (the NoCloud seed ISO, or `bcd.channel_key=` on the kernel
 * command line), and every connection proves it both ways before anything else on it is acted on.
 *
 * The exchange, after the guest's `Hello` (which stays first, as the seed says):
 *
 * 1. guest → host `AuthChallenge{nonce, epoch}`: a fresh 32-byte nonce and the guest's restore epoch.
 * 2. host → guest `AuthProof{nonce, epoch, time_ns, mac}`: the host's own fresh nonce, the epoch it claims, its
 *    wall clock, and `HMAC-SHA256(key, "bcd-turns-v1|host|<vm id>|<guest nonce>|<host nonce>|<epoch>|<time_ns>")`.
 * 3. guest → host `AuthOk{mac}`: the same MAC with `guest` in place of `host`, so the host knows it reached the VM
 *    that holds the key (a peer on the guest network cannot stand in for the guest either).
 *
 * MACs are compared in constant time. Both nonces are in both MACs, so neither side's answer can be replayed on
 * another connection. The epoch is the restore counter: the host raises it by one only when it has restored the
 * VM from a snapshot, and the guest takes a higher epoch as the proof that it was restored: only then does it send
 * `Resumed`, set its clock and, when drained, reopen its gate. A proof of the same epoch is a plain reconnection
 * (the gate stays as it is); a lower epoch is refused (`stale-epoch`).
 *
 * @module
 */
import { hexOf, hmacSha256Sync } from "../util/sha256.ts";
import { CHANNEL_KEY_BYTES, type ChannelKey } from "./channel_key.ts";

// The key itself (its length, generation and text form) lives in `channel_key.ts`. Neither module loads `node:crypto`
// (HMAC-SHA256 is `core/util/sha256.ts`'s): it costs an agent's start ~18 ms (issue 24).
export { CHANNEL_KEY_BYTES, type ChannelKey, formatChannelKey, newChannelKey, parseChannelKey } from "./channel_key.ts";

const HEX64 = /^[0-9a-f]{64}$/;

/** Why a connection was refused authentication; logged with the connection. */
export type ChannelAuthRefusal =
  /** A message other than `AuthProof` (or `Ping`) before the proof. */
  | "unauthenticated"
  /** The proof's MAC does not match. */
  | "bad-proof"
  /** The proof answers another challenge (its nonce is not this connection's). */
  | "wrong-challenge"
  /** The epoch is below the guest's. */
  | "stale-epoch"
  /** The guest's `AuthOk` MAC does not match (host side). */
  | "bad-guest-proof";

/** The channel could not be authenticated; carries the reason. */
export class ChannelAuthError extends Error {
  override name = "ChannelAuthError";
  constructor(readonly reason: ChannelAuthRefusal, message: string) {
    super(`auth ${reason}: ${message}`);
  }
}

/** A fresh nonce as 64 lowercase hex digits. */
export function newNonce(): string {
  return hexOf(crypto.getRandomValues(new Uint8Array(CHANNEL_KEY_BYTES)));
}

/** What a MAC binds. */
export interface ProofInput {
  readonly vmId: string;
  readonly guestNonce: string;
  readonly hostNonce: string;
  readonly epoch: number;
  /** The host's clock in `AuthProof` (bound by both MACs, so a restored guest's clock fix-up is authenticated). */
  readonly timeNs: bigint;
}

/** The MAC one side sends: `host` in `AuthProof`, `guest` in `AuthOk`, as 64 lowercase hex digits. */
export function channelProof(key: ChannelKey, side: "host" | "guest", p: ProofInput): string {
  if (key.length !== CHANNEL_KEY_BYTES) throw new RangeError(`a channel key is ${CHANNEL_KEY_BYTES} bytes`);
  return hexOf(
    hmacSha256Sync(
      key,
      `bcd-turns-v1|${side}|${p.vmId.toLowerCase()}|${p.guestNonce}|${p.hostNonce}|${p.epoch}|${p.timeNs}`,
    ),
  );
}

/** Whether `mac` is the proof of `side` for `p`, compared in constant time. */
export function verifyChannelProof(key: ChannelKey, side: "host" | "guest", p: ProofInput, mac: string): boolean {
  if (!HEX64.test(mac)) return false;
  // Both are 64 lowercase hex digits here: every character is compared, whatever differs.
  const want = channelProof(key, side, p);
  let d = 0;
  for (let i = 0; i < want.length; i++) d |= want.charCodeAt(i) ^ mac.charCodeAt(i);
  return d === 0;
}
