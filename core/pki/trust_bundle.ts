/**
 * The daemon's command-signing trust bundle: the roots worker keys chain to and, for the v1.0 quorum, the approver
 * keys and how many distinct approvers a batch needs.
 *
 * @module
 */
import { ED25519_PUBLIC_KEY_BYTES } from "./ed25519.ts";

/** The trust bundle as the daemon holds it (from `JoinResponse` / `Welcome`, kept in `identity.json`). */
export interface TrustBundle {
  /** Raw Ed25519 public keys of the command-signing roots. Empty: bcd enforces no signature (v0.1). */
  readonly commandSigningRoots: readonly Uint8Array[];
  /** Raw Ed25519 public keys of the approvers (`pki.approvers`). Empty: no quorum. */
  readonly approverKeys: readonly Uint8Array[];
  /** Distinct approver signatures a batch needs; always at least 1 when approver keys are present. */
  readonly approvalThreshold: number;
}

/** The bundle of a daemon that holds no roots: nothing is enforced. */
export const EMPTY_TRUST_BUNDLE: TrustBundle = { commandSigningRoots: [], approverKeys: [], approvalThreshold: 0 };

/**
 * Builds a bundle, checking every key's length. A threshold of 0 (unset) becomes `min(2, approvers)`: one approver
 * alone is a quorum only in a deployment that has only one. A threshold above the number of approver keys is refused,
 * since no batch could ever run.
 */
export function makeTrustBundle(input: {
  commandSigningRoots?: readonly Uint8Array[];
  approverKeys?: readonly Uint8Array[];
  approvalThreshold?: number;
}): TrustBundle {
  const roots = (input.commandSigningRoots ?? []).map((k, i) => _key(`commandSigningRoots[${i}]`, k));
  const approvers = (input.approverKeys ?? []).map((k, i) => _key(`approverKeys[${i}]`, k));
  let threshold = input.approvalThreshold ?? 0;
  if (!Number.isSafeInteger(threshold) || threshold < 0) throw new RangeError(`approvalThreshold ${threshold}`);
  if (approvers.length === 0) threshold = 0;
  else if (threshold === 0) threshold = Math.min(2, approvers.length);
  else if (threshold > approvers.length) {
    throw new RangeError(`approvalThreshold ${threshold} is above the ${approvers.length} approver keys`);
  }
  return { commandSigningRoots: roots, approverKeys: approvers, approvalThreshold: threshold };
}

/** True once the bundle holds command-signing roots: from then on every command must be signed. */
export function enforcesSignatures(bundle: TrustBundle): boolean {
  return bundle.commandSigningRoots.length > 0;
}

/** True when the bundle holds approver keys: destructive commands go through the quorum. */
export function enforcesQuorum(bundle: TrustBundle): boolean {
  return bundle.approverKeys.length > 0;
}

function _key(name: string, k: Uint8Array): Uint8Array {
  if (k.length !== ED25519_PUBLIC_KEY_BYTES) throw new RangeError(`${name}: ${k.length} bytes, not a raw Ed25519 key`);
  return k.slice();
}
