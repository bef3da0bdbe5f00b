/**
 * Ed25519: strict lengths, verification over the exact bytes given, key ids. Signing, key generation and
 * {@link verifyEd25519} go through WebCrypto, which Deno runs on its blocking pool, off the event loop's thread.
 *
 * Why verification runs off the event loop (issue 24): the event loop is the one thread every delivered command's
 * dispatch, journal statements and group commit share, and a command's Ed25519 check (~45 µs) was its largest single
 * piece of work there. Measured side by side (one run, 8 commands in flight, `bench:commands`): the event loop's CPU
 * per settled command fell from ~256 to ~190 µs and the settled rate rose 1.6-1.8x, on a 2-core host shared with other
 * work. That holds only because the dispatcher tells the journal an `accepted` is on its way while the check runs
 * (`Journal.expectWrite`): the check ends outside promise jobs, and without that the command's `accepted` missed the
 * group commit in progress and waited for the next one (the groups split, and the rate fell below the synchronous
 * check's). `verifyEd25519Sync` (`ed25519_sync.ts`: `node:crypto`, on the calling thread) stays for callers that
 * cannot await, in a module of its own so that importing this one never loads `node:crypto` (Node's crypto and
 * streams cost an agent ~20 ms of start, issue 24); the Wycheproof vectors (`wycheproof_test.ts`) pin that the two
 * give the same verdicts.
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

/** WebCrypto verification keys by raw key (hex): a node checks a handful of worker and root keys over and over. */
const _subtleKeys = new Map<string, CryptoKey>();
const _MAX_KEYS = 256;

/**
 * Verifies `signature` over exactly `message` with the raw public key, off the event loop's thread (WebCrypto; see
 * the module doc). Resolves false (never rejects for bad input) for a key or signature of the wrong length, a key
 * that is not a valid point, or a signature that does not verify: the same verdicts as `verifyEd25519Sync` (`ed25519_sync.ts`).
 */
export async function verifyEd25519(
  publicKey: Uint8Array,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean> {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES || signature.length !== ED25519_SIGNATURE_BYTES) return false;
  const id = toHex(publicKey);
  let key = _subtleKeys.get(id);
  if (key === undefined) {
    try {
      key = await crypto.subtle.importKey("raw", _buf(publicKey), { name: "Ed25519" }, false, ["verify"]);
    } catch (e) {
      if (e instanceof DOMException || e instanceof TypeError) return false;
      throw e;
    }
    if (_subtleKeys.size >= _MAX_KEYS) _subtleKeys.delete(_subtleKeys.keys().next().value!);
    _subtleKeys.set(id, key);
  }
  try {
    return await crypto.subtle.verify({ name: "Ed25519" }, key, _view(signature), _view(message));
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

const _HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += _HEX[bytes[i]!];
  return s;
}

/** Constant-shape byte equality (length first, then every byte). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

/** `b` itself when an ArrayBuffer backs it (WebCrypto copies what it reads), else {@link _buf}'s copy. */
function _view(b: Uint8Array): Uint8Array<ArrayBuffer> {
  return b.buffer instanceof ArrayBuffer ? b as Uint8Array<ArrayBuffer> : _buf(b);
}

/** Copies into a fresh ArrayBuffer-backed view, which WebCrypto's typings require. */
function _buf(b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(new ArrayBuffer(b.length));
  out.set(b);
  return out;
}
