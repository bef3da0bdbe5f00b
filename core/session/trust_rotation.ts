/**
 * Taking a trust bundle from `Welcome` (issue 22, item 1). The seed has the gateway send the bundle in `JoinResponse`
 * and `Welcome`; taking whatever a `Welcome` carries lets a compromised gateway switch signature checking off by
 * sending a bundle without roots. The rules bcd applies (the seed leaves rotation open; written down here):
 *
 * 1. A bundle equal to the held one (compared on its canonical encoding) changes nothing: the honest gateway resends
 *    it on every `Welcome`.
 * 2. While the node holds **no** command-signing roots (v0.1, or before the control plane turned signing on), an
 *    unsigned bundle is taken — that is how roots first arrive — except one that removes approver keys the node
 *    holds (refused: removing them is never silent).
 * 3. Once the node holds roots, a different bundle is taken only from `Welcome.signed_trust_bundle`: a signature
 *    envelope under purpose `trust-bundle` over the bundle's exact bytes, by a worker key whose certificate chains to
 *    the **held** roots and is valid in server time, with a `version` above the held one (no replay of an older
 *    signed bundle). An unsigned different bundle is refused.
 * 4. A taken bundle that removes every root, removes approver keys, lowers the approval threshold or raises the
 *    unbatched allowance is taken (it is signed by the held roots) but named in a warning: never silent.
 *
 * A refusal keeps the held bundle and the session; the caller logs it and journals a `TrustBundleRefused` event.
 *
 * @module
 */
import { bcd, decodeMessage, encodeMessage, type Props, WireDecodeError } from "../../proto/mod.ts";
import { bytesEqual, enforcesSignatures, SignatureError, verifyEnvelope } from "../pki/mod.ts";
import { trustBundleFromWire } from "./identity.ts";

/** The largest encoded trust bundle taken. */
export const MAX_TRUST_BUNDLE_BYTES = 256 * 1024;

/** What to do with the bundle a `Welcome` carries. */
export type BundleDecision =
  | { readonly action: "keep" }
  | { readonly action: "take"; readonly bytes: Uint8Array; readonly warnings: readonly string[] }
  | { readonly action: "refuse"; readonly why: string };

/** The bundle parts of a `Welcome`. */
export interface OfferedBundle {
  readonly trust_bundle?: Props<typeof bcd.v1.TrustBundle> | null;
  readonly signed_trust_bundle?: { bundle?: Uint8Array | null; signature?: Uint8Array | null } | null;
}

/**
 * Decides what the node does with `offered`, holding the encoded bundle `held` (empty: none), at server time
 * `serverNow` (the signer's certificate window). Never throws for bad input: refusals are decisions.
 */
export async function takeTrustBundle(
  held: Uint8Array,
  offered: OfferedBundle,
  serverNow: number,
): Promise<BundleDecision> {
  const heldTb = held.length === 0 ? bcd.v1.TrustBundle.create() : _decode(held);
  if (heldTb === undefined) return { action: "refuse", why: "the held trust bundle does not decode" };
  const heldTrust = trustBundleFromWire(held);
  const signed = offered.signed_trust_bundle;
  let bytes: Uint8Array;
  let isSigned = false;
  if (signed && (signed.bundle?.length ?? 0) > 0) {
    bytes = signed.bundle!;
    isSigned = true;
  } else if (offered.trust_bundle) {
    bytes = encodeMessage(bcd.v1.TrustBundle, offered.trust_bundle);
  } else return { action: "keep" };
  if (bytes.length > MAX_TRUST_BUNDLE_BYTES) {
    return { action: "refuse", why: `a trust bundle of ${bytes.length} bytes (at most ${MAX_TRUST_BUNDLE_BYTES})` };
  }
  const tb = _decode(bytes);
  if (tb === undefined) return { action: "refuse", why: "the offered trust bundle does not decode" };
  if (bytesEqual(_canonical(tb), _canonical(heldTb))) return { action: "keep" };
  try {
    trustBundleFromWire(bytes);
  } catch (e) {
    if (e instanceof RangeError) return { action: "refuse", why: `the offered trust bundle is invalid: ${e.message}` };
    throw e;
  }
  const change = describeChange(heldTb, tb);
  if (enforcesSignatures(heldTrust)) {
    if (!isSigned) {
      return {
        action: "refuse",
        why: `an unsigned trust bundle that differs from the held one (${change.summary}); a node that holds ` +
          `command-signing roots takes a new bundle only signed by them (Welcome.signed_trust_bundle)`,
      };
    }
    try {
      await verifyEnvelope(
        heldTrust.commandSigningRoots,
        "trust-bundle",
        bytes,
        signed!.signature ?? undefined,
        serverNow,
      );
    } catch (e) {
      if (e instanceof SignatureError) {
        return {
          action: "refuse",
          why: `a trust bundle (${change.summary}) whose signature does not chain to the held roots: ${e.message}`,
        };
      }
      throw e;
    }
    const hv = Number(heldTb.version ?? 0), nv = Number(tb.version ?? 0);
    if (nv <= hv) {
      return {
        action: "refuse",
        why: `a signed trust bundle of version ${nv}, not above the held version ${hv} (an older bundle replayed?)`,
      };
    }
  } else if (change.removesApprovers) {
    return {
      action: "refuse",
      why: `an unsigned trust bundle that removes approver keys (${change.summary}); the node holds no ` +
        `command-signing roots to check a signature against, so it keeps its approver keys`,
    };
  }
  return { action: "take", bytes, warnings: change.warnings };
}

/** What a new bundle changes that weakens enforcement. */
export function describeChange(
  held: bcd.v1.TrustBundle.$Properties,
  next: bcd.v1.TrustBundle.$Properties,
): { summary: string; warnings: string[]; removesApprovers: boolean } {
  const hr = held.command_signing_roots?.length ?? 0, nr = next.command_signing_roots?.length ?? 0;
  const ha = held.approver_keys?.length ?? 0, na = next.approver_keys?.length ?? 0;
  const heldKeys = new Set((held.approver_keys ?? []).map((k) => _hex(k.public_key)));
  const removed = (held.approver_keys ?? []).length -
    (next.approver_keys ?? []).filter((k) => heldKeys.has(_hex(k.public_key))).length;
  const warnings: string[] = [];
  if (hr > 0 && nr === 0) {
    warnings.push("it removes every command-signing root: commands and specs will no longer need signatures");
  }
  if (removed > 0) warnings.push(`it removes ${removed} of ${ha} approver keys`);
  if ((next.approver_threshold ?? 0) < (held.approver_threshold ?? 0) && na > 0) {
    warnings.push(`it lowers the approval threshold from ${held.approver_threshold} to ${next.approver_threshold}`);
  }
  if ((next.unbatched_destructive_per_hour ?? 0) > (held.unbatched_destructive_per_hour ?? 0)) {
    warnings.push(
      `it raises unbatched destructive commands per hour from ${
        held.unbatched_destructive_per_hour ?? 0
      } to ${next.unbatched_destructive_per_hour}`,
    );
  }
  return {
    summary: `version ${held.version ?? 0} → ${next.version ?? 0}, roots ${hr} → ${nr}, approver keys ${ha} → ${na}`,
    warnings,
    removesApprovers: removed > 0,
  };
}

function _decode(bytes: Uint8Array): bcd.v1.TrustBundle | undefined {
  try {
    return decodeMessage(bcd.v1.TrustBundle, bytes, { maxBytes: MAX_TRUST_BUNDLE_BYTES });
  } catch (e) {
    if (e instanceof WireDecodeError) return undefined;
    throw e;
  }
}

function _canonical(tb: bcd.v1.TrustBundle.$Properties): Uint8Array {
  return encodeMessage(bcd.v1.TrustBundle, tb);
}

function _hex(b: Uint8Array | null | undefined): string {
  return Array.from(b ?? [], (x) => x.toString(16).padStart(2, "0")).join("");
}
