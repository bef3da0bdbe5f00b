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
import { Buffer } from "node:buffer";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** The length of a channel key, nonce and MAC, in bytes. */
export const CHANNEL_KEY_BYTES = 32;
const HEX64 = /^[0-9a-f]{64}$/;

/** A VM's channel key. */
export type ChannelKey = Uint8Array;

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

/** A fresh random channel key. */
export function newChannelKey(): ChannelKey {
  return new Uint8Array(randomBytes(CHANNEL_KEY_BYTES));
}

/** A fresh nonce as 64 lowercase hex digits. */
export function newNonce(): string {
  return randomBytes(CHANNEL_KEY_BYTES).toString("hex");
}

/** The key as 64 lowercase hex digits, as it travels on the seed ISO or the kernel command line. */
export function formatChannelKey(key: ChannelKey): string {
  return Array.from(key, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Parses 64 hex digits (surrounding whitespace allowed); throws RangeError on anything else. */
export function parseChannelKey(text: string): ChannelKey {
  const t = text.trim().toLowerCase();
  if (!HEX64.test(t)) throw new RangeError(`a channel key is 64 hex digits (${CHANNEL_KEY_BYTES} bytes)`);
  const out = new Uint8Array(CHANNEL_KEY_BYTES);
  for (let i = 0; i < CHANNEL_KEY_BYTES; i++) out[i] = parseInt(t.slice(2 * i, 2 * i + 2), 16);
  return out;
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
  return createHmac("sha256", key)
    .update(`bcd-turns-v1|${side}|${p.vmId.toLowerCase()}|${p.guestNonce}|${p.hostNonce}|${p.epoch}|${p.timeNs}`)
    .digest("hex");
}

/** Whether `mac` is the proof of `side` for `p`, compared in constant time. */
export function verifyChannelProof(key: ChannelKey, side: "host" | "guest", p: ProofInput, mac: string): boolean {
  if (!HEX64.test(mac)) return false;
  const want = Buffer.from(channelProof(key, side, p), "hex");
  return timingSafeEqual(want, Buffer.from(mac, "hex"));
}
