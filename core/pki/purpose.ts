/**
 * Signature purposes and domain separation. Every bcd signature is over
 * `"bcd-sig-v1" 0x00 <purpose> 0x00 <bytes>`, so a signature made for one purpose never verifies for another, and the
 * verifier always builds the prefix from the purpose it expects, never from one the signer claims.
 *
 * @module
 */

/** The purposes bcd signs and verifies under. */
export type Purpose =
  /** `Command.signature`: a worker key over the exact `CommandBody` bytes. */
  | "command"
  /** A signed `DesiredStateBody`: the same envelope, another purpose. */
  | "desired-state"
  /** A root over a worker certificate's statement. */
  | "worker-cert"
  /** An approver over a destructive batch's scope. */
  | "batch-approval"
  /** The node over an attested command result (`CommandUpdate.node_sig`). */
  | "command-result"
  /** The node over an `AttestedReport` body (allocation events). */
  | "attested-report"
  /** The node over a session's challenge (`Hello.challenge_sig`): it proves its key on every session. */
  | "session"
  /** The node over its join request (`JoinRequest.proof`): proof of possession of the new key. */
  | "join"
  /** A node CA root over a node certificate (`JoinResponse.cert_chain`). */
  | "node-cert"
  /** A worker key over a new trust bundle (`Welcome.signed_trust_bundle`), chaining to the roots the node holds. */
  | "trust-bundle"
  /** A release key of the trust bundle over a release artifact's SHA-256 (the `daemon` section, `daemon.upgrade`). */
  | "release";

/** Every purpose, for validation of decoded certificates. */
export const PURPOSES: readonly Purpose[] = [
  "command",
  "desired-state",
  "worker-cert",
  "batch-approval",
  "command-result",
  "attested-report",
  "session",
  "join",
  "node-cert",
  "trust-bundle",
  "release",
];

const _enc = new TextEncoder();
/** Each purpose's prefix, encoded once: every delivered command's check builds one signed message. */
const _prefixes = new Map<Purpose, Uint8Array>(PURPOSES.map((p) => [p, _enc.encode(`bcd-sig-v1\0${p}\0`)]));

/** The exact bytes signed for `purpose` over `bytes`. */
export function signedMessage(purpose: Purpose, bytes: Uint8Array): Uint8Array {
  const prefix = _prefixes.get(purpose) ?? _enc.encode(`bcd-sig-v1\0${purpose}\0`);
  const out = new Uint8Array(prefix.length + bytes.length);
  out.set(prefix, 0);
  out.set(bytes, prefix.length);
  return out;
}
