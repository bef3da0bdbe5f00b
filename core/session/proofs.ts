/**
 * What a node signs to prove its key: on every session the gateway's challenge (purpose `session`), and once at join
 * its token and new public key (purpose `join`). Both sides build these bytes from this file.
 *
 * @module
 */
import { signEd25519, signedMessage, verifyEd25519 } from "../pki/mod.ts";

const _enc = new TextEncoder();

function _join(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + 1 + b.length);
  out.set(a, 0);
  out.set(b, a.length + 1);
  return out;
}

/** The bytes a node signs under purpose `session`: the challenge nonce, a NUL, and its node id. */
export function sessionProofMessage(nonce: Uint8Array, nodeId: string): Uint8Array {
  return _join(nonce, _enc.encode(nodeId));
}

/** The bytes a node signs under purpose `join`: the token, a NUL, and its public key. */
export function joinProofMessage(token: string, publicKey: Uint8Array): Uint8Array {
  return _join(_enc.encode(token), publicKey);
}

/** Signs the session challenge. */
export function signSessionProof(key: CryptoKey, nonce: Uint8Array, nodeId: string): Promise<Uint8Array> {
  return signEd25519(key, signedMessage("session", sessionProofMessage(nonce, nodeId)));
}

/** Verifies a session proof with the node's raw public key. */
export function verifySessionProof(
  publicKey: Uint8Array,
  signature: Uint8Array,
  nonce: Uint8Array,
  nodeId: string,
): Promise<boolean> {
  return verifyEd25519(publicKey, signature, signedMessage("session", sessionProofMessage(nonce, nodeId)));
}

/** Signs a join request. */
export function signJoinProof(key: CryptoKey, token: string, publicKey: Uint8Array): Promise<Uint8Array> {
  return signEd25519(key, signedMessage("join", joinProofMessage(token, publicKey)));
}

/** Verifies a join proof. */
export function verifyJoinProof(publicKey: Uint8Array, signature: Uint8Array, token: string): Promise<boolean> {
  return verifyEd25519(publicKey, signature, signedMessage("join", joinProofMessage(token, publicKey)));
}
