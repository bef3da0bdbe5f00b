/**
 * Taking a `DesiredState` (000 §How a spec reaches the node, §Signed desired state): a body for another node and any
 * generation not above the held one are ignored; once the trust bundle holds command-signing roots a spec without a
 * valid `desired-state` signature is refused (the 'always' rule); a patch applies against `base_generation` — each
 * section it sets replaces that section wholesale, an empty section clears it, unset sections stay — or the daemon
 * asks for the full spec (`PATCH_BASE_MISMATCH`). `spec_hash` is echoed, never recomputed. The result is the full
 * spec to hold, encoded as a full `DesiredStateBody` for the journal. A spec whose `access` section breaks a rule of
 * `core/access/section.ts` (a control character, a CA key that is not exactly one OpenSSH public key, a principal
 * with whitespace) is refused whole, signed or not: the previous spec stays in force (000 §Break-glass SSH).
 *
 * Seed reading (000 §Convergence and status: "A section number bcd does not know is `UNSUPPORTED`"): protobufjs drops
 * unknown fields, so the NodeSpec's fields this build's schema does not declare are read off the wire
 * ({@link unknownSpecSections}) and held beside the decoded spec as {@link UnknownSection}s. The engine reports each
 * as its own section, named by its field number: `UNSUPPORTED` with reason the field number (and a
 * `SectionUnsupported` condition) when it carries anything, trivially `CONVERGED` when empty. A patch replaces an
 * unknown section wholesale like a known one, and the merged spec journals the unknown records verbatim, so a restart
 * still knows them.
 *
 * @module
 */
import { bcd, decodeMessage, encodeMessage, WireDecodeError } from "../../proto/mod.ts";
import { enforcesSignatures, SignatureError, type TrustBundle, verifyEnvelope } from "../pki/mod.ts";
import { SECTION_ORDER } from "../converge/section.ts";
import { MessageBudgetError } from "../../proto/message_budget.ts";
import { isDefaultWireValue, unknownFields, wireFields } from "../../proto/unknown_fields.ts";
import { AccessSpecInvalid, checkAccessSection } from "../access/section.ts";

/** The spec the daemon holds. */
export interface HeldDesiredState {
  readonly generation: number;
  readonly specHash: string;
  readonly spec: bcd.v1.NodeSpec.$Properties;
  /** NodeSpec fields this build does not know (protobufjs drops them from `spec`), by field number. */
  readonly unknownSections: readonly UnknownSection[];
}

/** A NodeSpec field number this build does not know, as the spec carried it. */
export interface UnknownSection {
  readonly field: number;
  /** Every occurrence holds its type's default (an empty message): it converges trivially. */
  readonly empty: boolean;
  /** The field's wire records, kept so a merged patch journals them again. */
  readonly records: Uint8Array;
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
    /** For a patch: the received body and signature (spec_provenance.ts chains them to the held spec's). */
    readonly patch?: { readonly bytes: Uint8Array; readonly signature: Uint8Array | undefined };
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
  let unknown: UnknownSection[];
  try {
    unknown = unknownSpecSections(bytes, body.full ? FULL_FIELD : PATCH_FIELD);
  } catch (e) {
    if (e instanceof MessageBudgetError) return { action: "refuse", why: `undecodable spec body: ${e.message}` };
    throw e;
  }
  if (body.full) {
    const bad = _accessRefusal(body.full, generation);
    if (bad) return bad;
    return {
      action: "apply",
      held: { generation, specHash: body.spec_hash, spec: body.full, unknownSections: unknown },
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
  const bad = _accessRefusal(merged, generation);
  if (bad) return bad;
  const patched = new Set(unknown.map((u) => u.field));
  const mergedUnknown = [...ctx.held.unknownSections.filter((u) => !patched.has(u.field)), ...unknown]
    .sort((a, b) => a.field - b.field);
  return {
    action: "apply",
    held: { generation, specHash: body.spec_hash, spec: merged, unknownSections: mergedUnknown },
    bytes: encodeFullBody(body.node_id, generation, body.spec_hash, merged, mergedUnknown),
    signature: undefined,
    patch: { bytes, signature },
  };
}

const FULL_FIELD = 4;
const PATCH_FIELD = 5;

/**
 * The NodeSpec fields of an encoded `DesiredStateBody` (its `full`, field 4, or `patch`, field 5) that this build's
 * schema does not declare, merged per field number across the spec's occurrences as a decoder merges them.
 * Throws {@link MessageBudgetError} on malformed bytes.
 */
export function unknownSpecSections(bodyBytes: Uint8Array, specField: number = FULL_FIELD): UnknownSection[] {
  const by = new Map<number, { empty: boolean; records: Uint8Array[] }>();
  for (const occurrence of wireFields(bodyBytes)) {
    if (occurrence.field !== specField || occurrence.wireType !== 2) continue;
    for (const f of unknownFields(["bcd", "v1", "NodeSpec"], occurrence.value)) {
      const u = by.get(f.field) ?? { empty: true, records: [] };
      u.empty &&= isDefaultWireValue(f);
      u.records.push(f.record);
      by.set(f.field, u);
    }
  }
  return [...by.entries()].sort(([a], [b]) => a - b).map(([field, u]) => ({
    field,
    empty: u.empty,
    records: _concat(u.records),
  }));
}

/** A full `DesiredStateBody` for the journal: the known sections encoded, then the unknown ones' records verbatim. */
function encodeFullBody(
  nodeId: string,
  generation: number,
  specHash: string,
  spec: bcd.v1.NodeSpec.$Properties,
  unknown: readonly UnknownSection[],
): Uint8Array {
  if (unknown.length === 0) {
    return encodeMessage(bcd.v1.DesiredStateBody, { node_id: nodeId, generation, spec_hash: specHash, full: spec });
  }
  const head = encodeMessage(bcd.v1.DesiredStateBody, { node_id: nodeId, generation, spec_hash: specHash });
  const nodeSpec = _concat([encodeMessage(bcd.v1.NodeSpec, spec), ...unknown.map((u) => u.records)]);
  return _concat([head, _varint((FULL_FIELD << 3) | 2), _varint(nodeSpec.length), nodeSpec]);
}

function _varint(n: number): Uint8Array {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Uint8Array.from(out);
}

function _concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A refusal when the spec's `access` section breaks a rule; `undefined` when it keeps them all. */
function _accessRefusal(spec: bcd.v1.NodeSpec.$Properties, generation: number): IntakeDecision | undefined {
  try {
    checkAccessSection(spec.access);
    return undefined;
  } catch (e) {
    if (e instanceof AccessSpecInvalid) {
      return { action: "refuse", why: `spec generation ${generation} refused (${e.reason}): ${e.message}` };
    }
    throw e;
  }
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
    return {
      generation: Number(body.generation),
      specHash: body.spec_hash,
      spec: body.full,
      unknownSections: unknownSpecSections(bytes),
    };
  } catch (e) {
    if (e instanceof WireDecodeError || e instanceof MessageBudgetError) return undefined;
    throw e;
  }
}
