/**
 * Why the spec the journal holds may be enforced offline (issue 22, item 3): its signature is re-verified against the
 * trust bundle at start ({@link verifyHeldSpec}) before the node converges it without a gateway.
 *
 * A full spec is journaled with the `desired-state` envelope it arrived with. A patched spec is journaled merged, and
 * no envelope covers the merged bytes, so bcd journals a **provenance chain** in the signature column instead (bcd's
 * own format, the seed names none): `{"v":1,"chain":[{"body":b64,"sig":b64},…]}` — the signed full body it started
 * from and every signed patch since, each with its envelope, at most {@link MAX_CHAIN_ENTRIES} entries and
 * {@link MAX_CHAIN_BYTES}. At start each envelope is verified over its body and the patches are applied again in
 * order (with the intake's own rules); the result must be byte for byte the journaled spec. A patch that arrives
 * unsigned (no roots held then), or one past the chain's bounds, journals the merged spec without provenance: after a
 * restart it is enforced only while no roots are held, else the node asks for the full spec once connected.
 *
 * Interpretation: a worker certificate's window is not judged again at start (the spec was in force when it was
 * taken; a certificate that expired since does not make it forged), so each envelope is checked at server time
 * clamped into its certificate's window.
 *
 * @module
 */
import {
  bytesEqual,
  certificateFromJson,
  EMPTY_TRUST_BUNDLE,
  enforcesSignatures,
  MAX_ENVELOPE_BYTES,
  PkiFormatError,
  SignatureError,
  type TrustBundle,
  verifyEnvelope,
} from "../pki/mod.ts";
import { decodeBoundedJson, encodeJson, fromBase64, toBase64 } from "../pki/codec.ts";
import { type HeldDesiredState, heldFromJournal, MAX_SPEC_BYTES, takeDesiredState } from "./desired_state.ts";

/** The most entries (the full spec and its patches) a provenance chain keeps. */
export const MAX_CHAIN_ENTRIES = 32;
/** The most bytes of bodies a provenance chain keeps. */
export const MAX_CHAIN_BYTES = 2 * MAX_SPEC_BYTES;

/** A journaled spec: its bytes and what the signature column holds. */
export interface StoredSpecRecord {
  readonly bytes: Uint8Array;
  readonly signature?: Uint8Array;
}

interface Link {
  readonly body: Uint8Array;
  readonly sig: Uint8Array;
}

/**
 * The signature column for a spec merged from `held` and a patch (`patchBytes`, `patchSig`): the held provenance
 * extended by the patch, or `undefined` when the patch or the held spec is unsigned or the chain would pass its bounds.
 */
export function extendProvenance(
  held: StoredSpecRecord | undefined,
  patchBytes: Uint8Array,
  patchSig: Uint8Array | undefined,
): Uint8Array | undefined {
  if (!held?.signature || held.signature.length === 0 || !patchSig || patchSig.length === 0) return undefined;
  const prev = _chain(held.signature) ?? [{ body: held.bytes, sig: held.signature }];
  const next = [...prev, { body: patchBytes, sig: patchSig }];
  if (next.length > MAX_CHAIN_ENTRIES) return undefined;
  if (next.reduce((n, l) => n + l.body.length + l.sig.length, 0) > MAX_CHAIN_BYTES) return undefined;
  return encodeJson({ v: 1, chain: next.map((l) => ({ body: toBase64(l.body), sig: toBase64(l.sig) })) });
}

/**
 * Re-checks the journal's spec before it is enforced offline: once `trust` holds command-signing roots, its
 * signature column must be a `desired-state` envelope over the stored bytes, or a provenance chain that verifies and
 * rebuilds them, all chaining to those roots. Returns why it fails, or `undefined` when it may be enforced (always,
 * while `trust` holds no roots).
 */
export async function verifyHeldSpec(
  stored: StoredSpecRecord,
  trust: TrustBundle,
  serverNow: number,
  nodeId: string,
): Promise<string | undefined> {
  if (!enforcesSignatures(trust)) return undefined;
  const sig = stored.signature;
  if (sig === undefined || sig.length === 0) {
    return "the journal's spec carries no signature (a patch taken unsigned, or a spec taken while no roots were held)";
  }
  const chain = _chain(sig);
  if (chain === undefined) return await _verifyOne(trust, stored.bytes, sig, serverNow);
  if (chain.length < 2) return "a provenance chain without a patch";
  for (const [i, l] of chain.entries()) {
    const why = await _verifyOne(trust, l.body, l.sig, serverNow);
    if (why) return `provenance entry ${i}: ${why}`;
  }
  let held: HeldDesiredState | undefined = heldFromJournal(chain[0]!.body, nodeId);
  if (!held) return "the provenance chain does not start from a full spec for this node";
  let bytes = chain[0]!.body;
  for (const [i, l] of chain.slice(1).entries()) {
    const d = await takeDesiredState({ body: l.body }, { nodeId, held, trust: EMPTY_TRUST_BUNDLE, serverNow });
    if (d.action !== "apply" || !d.patch) {
      return `provenance entry ${i + 1} does not apply as a patch on the one before`;
    }
    held = d.held;
    bytes = d.bytes;
  }
  if (!bytesEqual(bytes, stored.bytes)) return "the provenance chain does not rebuild the journaled spec";
  return undefined;
}

async function _verifyOne(
  trust: TrustBundle,
  bytes: Uint8Array,
  sig: Uint8Array,
  serverNow: number,
): Promise<string | undefined> {
  let at = serverNow;
  try {
    const env = decodeBoundedJson("envelope", sig, MAX_ENVELOPE_BYTES);
    const cert = certificateFromJson(env.cert);
    at = Math.min(Math.max(serverNow, cert.statement.notBefore), cert.statement.notAfter);
  } catch (e) {
    if (!(e instanceof PkiFormatError)) throw e;
    // verifyEnvelope below reports the malformed envelope.
  }
  try {
    await verifyEnvelope(trust.commandSigningRoots, "desired-state", bytes, sig, at);
    return undefined;
  } catch (e) {
    if (e instanceof SignatureError) return `its signature does not verify: ${e.message}`;
    throw e;
  }
}

/** The chain in a signature column, or `undefined` when the column holds something else (an envelope). */
function _chain(sig: Uint8Array): Link[] | undefined {
  if (sig.length > MAX_CHAIN_BYTES * 2) return undefined;
  try {
    const o = decodeBoundedJson("provenance", sig, MAX_CHAIN_BYTES * 2);
    if (o.v !== 1 || !Array.isArray(o.chain) || o.chain.length > MAX_CHAIN_ENTRIES) return undefined;
    return o.chain.map((e: unknown) => {
      const r = (e ?? {}) as Record<string, unknown>;
      return {
        body: fromBase64("chain.body", r.body, MAX_SPEC_BYTES),
        sig: fromBase64("chain.sig", r.sig, MAX_ENVELOPE_BYTES),
      };
    });
  } catch (e) {
    if (e instanceof PkiFormatError) return undefined;
    throw e;
  }
}
