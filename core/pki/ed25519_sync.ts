/**
 * Synchronous Ed25519 verification through `node:crypto`, on the calling thread, for callers that cannot await.
 * The agents check command and desired-state signatures on the Ed25519 thread (`ed25519_thread.ts`, the same
 * `node:crypto` verify on a thread of its own) and others with `verifyEd25519` in `ed25519.ts` (WebCrypto); this one
 * lives apart so that importing `ed25519.ts` never loads `node:crypto` and Node's streams (issue 24: ~20 ms of an
 * agent's start). The Wycheproof vectors (`wycheproof_test.ts`) pin that the two give the same verdicts.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createPublicKey, type KeyObject, verify as nodeVerify } from "node:crypto";
import { ED25519_PUBLIC_KEY_BYTES, ED25519_SIGNATURE_BYTES, toHex } from "./ed25519.ts";

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw 32-byte key follows it. */
const _SPKI_PREFIX = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

/** Imported verification keys by raw key (hex), bounded like `verifyEd25519`'s WebCrypto keys. */
const _keys = new Map<string, KeyObject>();
const _MAX_KEYS = 256;

function _verifyKey(raw: Uint8Array): KeyObject {
  const id = toHex(raw);
  let k = _keys.get(id);
  if (k === undefined) {
    const der = new Uint8Array(_SPKI_PREFIX.length + raw.length);
    der.set(_SPKI_PREFIX);
    der.set(raw, _SPKI_PREFIX.length);
    k = createPublicKey({ key: Buffer.from(der.buffer), format: "der", type: "spki" });
    if (_keys.size >= _MAX_KEYS) _keys.delete(_keys.keys().next().value!);
    _keys.set(id, k);
  }
  return k;
}

/**
 * Verifies `signature` over exactly `message` with the raw public key, synchronously (see the module doc). Returns
 * false (never throws) for a key or signature of the wrong length, a key that is not a valid point, or a signature
 * that does not verify.
 */
export function verifyEd25519Sync(publicKey: Uint8Array, signature: Uint8Array, message: Uint8Array): boolean {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES || signature.length !== ED25519_SIGNATURE_BYTES) return false;
  let key: KeyObject;
  try {
    key = _verifyKey(publicKey);
  } catch (e) {
    if (e instanceof TypeError || e instanceof RangeError || _isCryptoError(e)) return false;
    throw e;
  }
  try {
    return nodeVerify(null, message, key, signature);
  } catch (e) {
    if (e instanceof TypeError || _isCryptoError(e)) return false;
    throw e;
  }
}

/** `node:crypto`'s refusals of a key or signature (an Error with an `ERR_*` code). */
function _isCryptoError(e: unknown): boolean {
  const code = e instanceof Error ? (e as Error & { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("ERR_");
}
