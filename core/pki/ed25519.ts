/**
 * Ed25519 through WebCrypto: strict lengths, verification over the exact bytes given, key ids.
 *
 * @module
 */

/** The length of a raw Ed25519 public key. */
export const ED25519_PUBLIC_KEY_BYTES = 32;
/** The length of an Ed25519 signature. */
export const ED25519_SIGNATURE_BYTES = 64;

/** A key pair for signing (worker, approver, node and test keys). */
export interface SigningKeyPair {
  readonly privateKey: CryptoKey;
  /** The raw 32-byte public key. */
  readonly publicKey: Uint8Array;
}

/** Imports a raw 32-byte Ed25519 public key for verification; throws `RangeError` on any other length. */
export async function importPublicKey(raw: Uint8Array): Promise<CryptoKey> {
  if (raw.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new RangeError(`an Ed25519 public key is ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${raw.length}`);
  }
  return await crypto.subtle.importKey("raw", _buf(raw), { name: "Ed25519" }, false, ["verify"]);
}

/**
 * Verifies `signature` over exactly `message` with the raw public key. Returns false (never throws) for a key or
 * signature of the wrong length, a key WebCrypto refuses, or a signature that does not verify.
 */
export async function verifyEd25519(
  publicKey: Uint8Array,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean> {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES || signature.length !== ED25519_SIGNATURE_BYTES) return false;
  let key: CryptoKey;
  try {
    key = await importPublicKey(publicKey);
  } catch (e) {
    if (e instanceof DOMException || e instanceof TypeError || e instanceof RangeError) return false;
    throw e;
  }
  try {
    return await crypto.subtle.verify({ name: "Ed25519" }, key, _buf(signature), _buf(message));
  } catch (e) {
    if (e instanceof DOMException || e instanceof TypeError) return false;
    throw e;
  }
}

/** Signs `message` with an Ed25519 private key. */
export async function signEd25519(privateKey: CryptoKey, message: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, privateKey, _buf(message)));
}

/** Generates an Ed25519 key pair (extractable public half). */
export async function generateSigningKeyPair(): Promise<SigningKeyPair> {
  const kp = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const publicKey = new Uint8Array(await crypto.subtle.exportKey("raw", kp.publicKey));
  return { privateKey: kp.privateKey, publicKey };
}

/** Imports a PKCS#8 Ed25519 private key together with its raw public key. */
export async function importSigningKeyPair(pkcs8: Uint8Array, publicKey: Uint8Array): Promise<SigningKeyPair> {
  const privateKey = await crypto.subtle.importKey("pkcs8", _buf(pkcs8), { name: "Ed25519" }, false, ["sign"]);
  return { privateKey, publicKey: publicKey.slice() };
}

/** SHA-256 of `bytes`. */
export async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", _buf(bytes)));
}

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** Constant-shape byte equality (length first, then every byte). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/** Copies into a fresh ArrayBuffer-backed view, which WebCrypto's typings require. */
function _buf(b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(new ArrayBuffer(b.length));
  out.set(b);
  return out;
}
