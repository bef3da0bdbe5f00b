/**
 * An agent release as the self-update sees it (the `daemon` section and `daemon.upgrade`, 000 §NodeSpec `daemon`):
 * a version, an https URL of the role's `make bundle` output packed as one `.tar.gz`, its SHA-256, and an Ed25519
 * signature under purpose `release` over the 32 digest bytes by a release key of the trust bundle
 * (`TrustBundle.release_keys`). While the bundle holds no release key an unsigned release is accepted (as commands go
 * unsigned before command-signing roots, v0.1); once it holds one, a release must carry a signature by one of them.
 *
 * Refusals ({@link ReleaseRefused}) carry a reason: `bad-version`, `bad-digest` (malformed, or the bytes do not hash to
 * it), `BAD_SIGNATURE` (the seed's word for a signature that does not verify or is missing where required),
 * `not-https`, `too-large`, `unsafe-release` (the tar safety kernel refused it), `rolled-back` (this version was swapped
 * in and its process never reached `Welcome`), `download-failed`.
 *
 * @module
 */
import { fromHex } from "./hex.ts";
import { signEd25519, verifyEd25519 } from "../pki/ed25519.ts";
import { signedMessage } from "../pki/purpose.ts";

/** A release the self-update will not take, with its reason. */
export class ReleaseRefused extends Error {
  override name = "ReleaseRefused";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Reasons a later attempt may get past (the network, a swap still waiting): the section stays `PROGRESSING`. */
export const RETRYABLE_REASONS: ReadonlySet<string> = new Set([
  "download-failed",
  "download-stalled",
  "download-timeout",
  "swap-pending",
]);

/** What the control plane asks for (the `daemon` section's fields, `DaemonUpgradePayload`'s). */
export interface ReleaseTarget {
  readonly version: string;
  readonly url: string;
  readonly sha256: string;
  readonly signature: Uint8Array;
}

/** A release version: a directory name under `releases/`, never `.`/`..`-like. */
export const RELEASE_VERSION_RE = /^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/;

/** The largest release artifact (compressed) the self-update takes: the bundle carries the Deno runtime. */
export const MAX_RELEASE_BYTES = 512 * 1024 * 1024;

/** Checks a version string (`bad-version`). */
export function checkReleaseVersion(v: unknown): string {
  if (typeof v !== "string" || !RELEASE_VERSION_RE.test(v) || v.includes("..")) {
    throw new ReleaseRefused("bad-version", `release version ${JSON.stringify(v)} is not 1-64 of [0-9A-Za-z._+-]`);
  }
  return v;
}

/** Checks a SHA-256 in lowercase hex (`bad-digest`). */
export function checkSha256(s: unknown): string {
  if (typeof s !== "string" || !/^[0-9a-f]{64}$/.test(s)) {
    throw new ReleaseRefused("bad-digest", `release sha256 ${JSON.stringify(s)} is not 64 lowercase hex digits`);
  }
  return s;
}

/** Checks a target's fields before anything is fetched: version, https URL, digest. */
export function checkTarget(t: ReleaseTarget): ReleaseTarget {
  checkReleaseVersion(t.version);
  checkSha256(t.sha256);
  let u: URL;
  try {
    u = new URL(t.url);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    throw new ReleaseRefused("not-https", `release URL ${JSON.stringify(t.url)} is not a URL`);
  }
  if (u.protocol !== "https:") throw new ReleaseRefused("not-https", `release URL ${t.url} is not https`);
  return t;
}

/**
 * Verifies `signature` over the digest against `keys`. No keys: accepted whatever it carries (nothing to check it
 * against). Keys: `BAD_SIGNATURE` when it is missing or no key verifies it.
 */
export async function verifyReleaseSignature(
  sha256: string,
  signature: Uint8Array,
  keys: readonly Uint8Array[],
): Promise<void> {
  if (keys.length === 0) return;
  if (signature.length === 0) {
    throw new ReleaseRefused("BAD_SIGNATURE", "the release is unsigned and the trust bundle holds release keys");
  }
  const msg = signedMessage("release", fromHex(checkSha256(sha256)));
  for (const k of keys) if (await verifyEd25519(k, signature, msg)) return;
  throw new ReleaseRefused("BAD_SIGNATURE", `no release key of the trust bundle signed release ${sha256}`);
}

/** Signs a release digest with a release key (the release tooling's half; tests). */
export async function signRelease(privateKey: CryptoKey, sha256: string): Promise<Uint8Array> {
  return await signEd25519(privateKey, signedMessage("release", fromHex(checkSha256(sha256))));
}
