/**
 * The launch capability on attach (seed 002 §Host program: `Client::attach` "attaches with the VM's launch
 * capability"; §Commands: `reattach` "reads the capability from the store, attaches a new session"). The seed's
 * broker checks the capability below the framing; bcd has no broker (QEMU serves the control socket), so the guest
 * checks it, on the framing, once per epoch:
 *
 * - the launch draws 32 random bytes, keeps them in the sandbox store (mode 0600, in the 0700 store) and writes them
 *   into the VM's initramfs, which the guest's worker reads at start;
 * - each attachment's first message is Attach: the capability, then a fresh 16-byte nonce. The guest answers
 *   Attached with the nonce when the capability is its own, and AttachRefused with the nonce otherwise
 *   ({@link CAPABILITY_REFUSED}); until an epoch attached, it answers nothing else and drops every other message,
 *   and a reset (the host side's disconnect) ends the attachment;
 * - the answer's 21 bytes (header and nonce) are also the client's sync mark: it drops every byte of an earlier epoch
 *   before them, as the sync Echo does (`mod.ts` §Reattach).
 *
 * A guest without a capability (`serve` on a pipe, a VM that another tool built) answers every Attach with Attached.
 *
 * Issue 21's channel key (`auth.ts`, kinds 36–38: a mutual HMAC proof, for the VMs that the node and the migration
 * run) gates the same channel by a stronger handshake; the two land side by side (a VM holds one or the other) and
 * should become one: the launch capability as the VM's channel key, and the worker taking that handshake.
 *
 * @module
 */
import { BodyError } from "./errors.ts";

/** The capability's length. */
export const CAPABILITY_BYTES = 32;
/** The nonce's length. */
export const ATTACH_NONCE_BYTES = 16;
/** The reason of a refused attach. */
export const CAPABILITY_REFUSED = "capability-refused";

/** An Attach's body. */
export interface Attach {
  readonly capability: Uint8Array;
  readonly nonce: Uint8Array;
}

/** Encodes an Attach's body. */
export function encodeAttach(a: Attach): Uint8Array {
  if (a.capability.length !== CAPABILITY_BYTES || a.nonce.length !== ATTACH_NONCE_BYTES) {
    throw new RangeError(`an Attach holds ${CAPABILITY_BYTES} bytes of capability and ${ATTACH_NONCE_BYTES} of nonce`);
  }
  const b = new Uint8Array(CAPABILITY_BYTES + ATTACH_NONCE_BYTES);
  b.set(a.capability);
  b.set(a.nonce, CAPABILITY_BYTES);
  return b;
}

/** Decodes an Attach's body; throws {@link BodyError} (`attach`) for another length. */
export function decodeAttach(body: Uint8Array): Attach {
  if (body.length !== CAPABILITY_BYTES + ATTACH_NONCE_BYTES) {
    throw new BodyError("attach", `${body.length} bytes, not ${CAPABILITY_BYTES + ATTACH_NONCE_BYTES}`);
  }
  return { capability: body.slice(0, CAPABILITY_BYTES), nonce: body.slice(CAPABILITY_BYTES) };
}

/** Whether `a` is the capability `b`, in time independent of where they differ. */
export function capabilityMatches(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/** Parses a capability kept as 64 hexadecimal digits (the store's and the initramfs's file); throws RangeError. */
export function parseCapability(text: string): Uint8Array {
  const t = text.trim();
  if (!/^[0-9a-f]{64}$/.test(t)) throw new RangeError("a launch capability is 64 lowercase hexadecimal digits");
  return Uint8Array.from(t.match(/../g)!, (h) => Number.parseInt(h, 16));
}

/** Formats a capability as {@link parseCapability} reads it. */
export function formatCapability(c: Uint8Array): string {
  return [...c].map((b) => b.toString(16).padStart(2, "0")).join("");
}
