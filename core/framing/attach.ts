/**
 * The channel gate of the control framing: one handshake per epoch that proves the VM's one per-VM secret, which is
 * both the seed's launch capability (seed 002 §Host program: `Client::attach` "attaches with the VM's launch
 * capability"; §Commands: `reattach` "reads the capability from the store, attaches a new session") and issue 21's
 * channel key (the same 32 bytes prove the turn protocol's channel, `core/turns/auth.ts`). The seed's broker checks
 * the capability below the framing; bcd has no broker (QEMU serves the control socket), so the guest checks it, on
 * the framing, and never sees it on the wire: both sides prove it with a MAC over both sides' fresh nonces.
 *
 * The handshake, the first messages of each epoch; the host proves the secret first, so a guest reveals nothing to a
 * host that does not hold it:
 *
 * 1. host → Attach: a fresh 16-byte nonce.
 * 2. guest → AuthChallenge: the Attach's nonce and the guest's fresh 32-byte nonce. A guest without a secret
 *    answers Attached (the nonce alone) at once instead; a host that holds one refuses that guest (`auth`).
 * 3. host → AuthProof: the host's MAC over both nonces (`auth.ts`).
 * 4. guest → Attached: the Attach's nonce and the guest's MAC over both nonces, when the host's MAC proves the
 *    secret, so the host knows it reached the VM that holds it (else the client ends `auth`); AttachRefused (the
 *    Attach's nonce, reason {@link CAPABILITY_REFUSED}) otherwise: the epoch stays unattached and the VM runs on.
 *
 * Until an epoch attached, the guest answers nothing but the handshake and drops every other message (logged once
 * per epoch as `unauthenticated`); a reset (the host side's disconnect) ends the attachment, and an Attach inside
 * an attached epoch starts the handshake over. The 21 bytes of the guest's first answer (its header and the Attach's
 * nonce: the AuthChallenge's header and nonce prefix, or Attached/AttachRefused whole) are also the client's sync
 * mark: it drops every byte of an earlier epoch before them, as the sync Echo does (`mod.ts` §Reattach).
 *
 * A guest without a secret (`serve` on a pipe, a VM that another tool built) serves any host.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { FRAMING_AUTH_BYTES } from "./auth.ts";

/** The Attach nonce's length. */
export const ATTACH_NONCE_BYTES = 16;
/** The reason of a refused attach: the host did not prove the VM's secret. */
export const CAPABILITY_REFUSED = "capability-refused";
/** The length of an AuthChallenge's body (the Attach's nonce, the guest's nonce) and of a proven Attached's. */
export const AUTH_CHALLENGE_BYTES = ATTACH_NONCE_BYTES + FRAMING_AUTH_BYTES;

/** Two byte strings of fixed lengths as one body: an AuthChallenge's or a proven Attached's. */
export function encodeNoncePair(nonce: Uint8Array, second: Uint8Array): Uint8Array {
  if (nonce.length !== ATTACH_NONCE_BYTES || second.length !== FRAMING_AUTH_BYTES) {
    throw new RangeError(`the body holds ${ATTACH_NONCE_BYTES} bytes of nonce, then ${FRAMING_AUTH_BYTES}`);
  }
  const b = new Uint8Array(AUTH_CHALLENGE_BYTES);
  b.set(nonce);
  b.set(second, ATTACH_NONCE_BYTES);
  return b;
}

/**
 * Splits an AuthChallenge's body (the Attach's nonce, the guest's nonce) or a proven Attached's (the nonce, the
 * guest's MAC); throws {@link BodyError} (`what`) for another length.
 */
export function decodeNoncePair(what: string, body: Uint8Array): { nonce: Uint8Array; second: Uint8Array } {
  if (body.length !== AUTH_CHALLENGE_BYTES) {
    throw new BodyError(what, `${body.length} bytes, not ${AUTH_CHALLENGE_BYTES}`);
  }
  return { nonce: body.slice(0, ATTACH_NONCE_BYTES), second: body.slice(ATTACH_NONCE_BYTES) };
}

/** Checks an Attach's body (the nonce); throws {@link BodyError} (`attach`) for another length. */
export function decodeAttach(body: Uint8Array): Uint8Array {
  if (body.length !== ATTACH_NONCE_BYTES) {
    throw new BodyError("attach", `${body.length} bytes, not ${ATTACH_NONCE_BYTES}`);
  }
  return body.slice();
}
