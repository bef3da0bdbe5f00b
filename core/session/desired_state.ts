/**
 * Taking a `DesiredState` (000 §How a spec reaches the node, §Signed desired state): a body for another node and any
 * generation not above the held one are ignored; once the trust bundle holds command-signing roots a spec without a
 * valid `desired-state` signature is refused (the 'always' rule); a patch applies against `base_generation` — each
 * section it sets replaces that section wholesale, an empty section clears it, unset sections stay — or the daemon
 * asks for the full spec (`PATCH_BASE_MISMATCH`). `spec_hash` is echoed, never recomputed. The result is the full
 * spec to hold, encoded as a full `DesiredStateBody` for the journal.
 *
 * @module
 */
import { bcd, decodeMessage, encodeMessage, WireDecodeError } from "../../proto/mod.ts";
import { enforcesSignatures, SignatureError, type TrustBundle, verifyEnvelope } from "../pki/mod.ts";
import { SECTION_ORDER } from "../converge/section.ts";

/** The spec the daemon holds. */
export interface HeldDesiredState {
  readonly generation: number;
  readonly specHash: string;
  readonly spec: bcd.v1.NodeSpec.$Properties;
}

/** What to do with a delivered `DesiredState`. */
export type IntakeDecision =
  | { readonly action: "ignore"; readonly why: string }
  | { readonly action: "refuse"; readonly why: string }
  | { readonly action: "request"; readonly reason: "PATCH_BASE_MISMATCH"; readonly why: string }
  | {
    readonly action: "apply";
    readonly held: HeldDesiredState;
    /** The full body to journal: the received bytes for a full spec, the merged spec re-encoded for a patch. */
    readonly bytes: Uint8Array;
    /** The signature to journal with `bytes` (the received one for a full spec; none for a merged patch). */
    readonly signature: Uint8Array | undefined;
  };

/** Inputs of {@link takeDesiredState}. */
export interface IntakeContext {
  readonly nodeId: string;
  readonly held: HeldDesiredState | undefined;
  readonly trust: TrustBundle;
  /** Server time, ms (certificate windows). */
  readonly serverNow: number;
}

/** The largest DesiredStateBody accepted. */
export const MAX_SPEC_BYTES = 4 * 1024 * 1024;

/** Decides what a delivered `DesiredState` does. Never throws for bad input: refusals are decisions. */
export async function takeDesiredState(
  frame: { body?: Uint8Array | null; signature?: Uint8Array | null },
  ctx: IntakeContext,
): Promise<IntakeDecision> {
  const bytes = frame.body ?? new Uint8Array();
  let body: bcd.v1.DesiredStateBody;
  try {
    body = decodeMessage(bcd.v1.DesiredStateBody, bytes, { maxBytes: MAX_SPEC_BYTES });
  } catch (e) {
    if (e instanceof WireDecodeError) return { action: "refuse", why: `undecodable spec body: ${e.message}` };
    throw e;
  }
  if (body.node_id !== ctx.nodeId) return { action: "ignore", why: `spec for node "${body.node_id}"` };
  const generation = Number(body.generation);
  const heldGen = ctx.held?.generation ?? 0;
  if (generation <= heldGen) return { action: "ignore", why: `generation ${generation} is not above ${heldGen}` };
  if (enforcesSignatures(ctx.trust)) {
    try {
      await verifyEnvelope(
        ctx.trust.commandSigningRoots,
        "desired-state",
        bytes,
        frame.signature ?? undefined,
        ctx.serverNow,
      );
    } catch (e) {
      if (e instanceof SignatureError) {
        return { action: "refuse", why: `spec generation ${generation} refused: ${e.message}` };
      }
      throw e;
    }
  }
  const signature = frame.signature && frame.signature.length > 0 ? frame.signature : undefined;
  if (body.full) {
    return {
      action: "apply",
      held: { generation, specHash: body.spec_hash, spec: body.full },
      bytes,
      signature,
    };
  }
  if (!body.patch) return { action: "refuse", why: `spec generation ${generation} carries neither full nor patch` };
  const base = Number(body.base_generation);
  if (!ctx.held || base !== ctx.held.generation) {
    return {
      action: "request",
      reason: "PATCH_BASE_MISMATCH",
      why: `patch against generation ${base}, but the held generation is ${heldGen}`,
    };
  }
  const merged = mergePatch(ctx.held.spec, body.patch);
  const full = encodeMessage(bcd.v1.DesiredStateBody, {
    node_id: body.node_id,
    generation,
    spec_hash: body.spec_hash,
    full: merged,
  });
  return {
    action: "apply",
    held: { generation, specHash: body.spec_hash, spec: merged },
    bytes: full,
    signature: undefined,
  };
}

/** Every section the patch sets replaces the held one wholesale (an empty section clears it); unset ones stay. */
export function mergePatch(
  held: bcd.v1.NodeSpec.$Properties,
  patch: bcd.v1.NodeSpec.$Properties,
): bcd.v1.NodeSpec.$Properties {
  const out: Record<string, unknown> = {};
  for (const s of SECTION_ORDER) {
    const p = (patch as unknown as Record<string, unknown>)[s];
    const h = (held as unknown as Record<string, unknown>)[s];
    const v = p != null ? p : h;
    if (v != null) out[s] = v;
  }
  return out as bcd.v1.NodeSpec.$Properties;
}

/** Reads the spec the journal holds back into a {@link HeldDesiredState}; `undefined` when unusable. */
export function heldFromJournal(bytes: Uint8Array, nodeId: string): HeldDesiredState | undefined {
  try {
    const body = decodeMessage(bcd.v1.DesiredStateBody, bytes, { maxBytes: MAX_SPEC_BYTES });
    if (!body.full || body.node_id !== nodeId) return undefined;
    return { generation: Number(body.generation), specHash: body.spec_hash, spec: body.full };
  } catch (e) {
    if (e instanceof WireDecodeError) return undefined;
    throw e;
  }
}
