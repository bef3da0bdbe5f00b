/**
 * The destructive-batch quorum (v1.0): approvals of distinct approver keys over a batch scope, and the proof that a
 * command's `(subject, kind)` leaf is in that scope.
 *
 * Formats (JSON, UTF-8):
 * - scope statement: `{"v":1,"batch_id":<string>,"root":<b64 32>,"size":<leaves>,"not_after":<unix ms, server time>}`;
 * - `Command.batch_approval`: `{"v":1,"scope":<b64 scope statement bytes>,"approvals":[{"key":<b64 32>,"sig":<b64 64>}]}`,
 *   each `sig` an approver's Ed25519 signature under purpose `batch-approval` over the exact scope bytes;
 * - `Command.batch_proof`: `{"v":1,"index":<leaf index>,"path":[<b64 32>...]}`, the leaf's RFC 9162 inclusion path.
 *
 * The leaf's subject is the node the command acts on (its `node_id`) unless the kind binds more (see the kinds
 * registry). Whether a leaf already ran is the {@link QuorumLedger}'s business, not this module's.
 *
 * @module
 */
import { bytesEqual, signEd25519, type SigningKeyPair, toHex, verifyEd25519 } from "./ed25519.ts";
import { decodeBoundedJson, encodeJson, fromBase64, intField, PkiFormatError, stringField, toBase64 } from "./codec.ts";
import { inclusionProof, leafHash, MAX_PROOF_HASHES, merkleRoot, verifyInclusion } from "./merkle.ts";
import { signedMessage } from "./purpose.ts";
import type { TrustBundle } from "./trust_bundle.ts";

/** The largest approval and proof decoded. */
export const MAX_APPROVAL_BYTES = 16384;
export const MAX_PROOF_BYTES = 4096;
/** The most approvals read from one `batch_approval`. */
export const MAX_APPROVALS = 32;

/** The two quorum reasons of the acceptance checks. */
export type QuorumReason = "BATCH_UNAPPROVED" | "UNBATCHED_LIMIT";

/** A destructive command the quorum does not admit. */
export class QuorumError extends Error {
  override name = "QuorumError";
  constructor(readonly reason: QuorumReason, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A batch's scope. */
export interface BatchScope {
  readonly batchId: string;
  readonly root: Uint8Array;
  readonly size: number;
  readonly notAfter: number;
}

/** One leaf of a batch. */
export interface BatchLeaf {
  readonly subject: string;
  readonly kind: string;
}

/** What the quorum admitted: the leaf to mark as run once the command is accepted. */
export interface BatchAdmission {
  readonly batchId: string;
  /** Hex of the leaf hash. */
  readonly leaf: string;
  /** Server time after which the scope admits nothing more (and the ledger may forget the leaf). */
  readonly scopeNotAfter: number;
}

/** A built batch: the scope bytes approvers sign and a proof per leaf (the testbed gateway's half). */
export interface BuiltBatch {
  readonly scope: BatchScope;
  readonly scopeBytes: Uint8Array;
  proof(index: number): Promise<Uint8Array>;
}

/** Builds a batch over `leaves` (the server's quorum module, for tests and the testbed gateway). */
export async function buildBatch(batchId: string, leaves: readonly BatchLeaf[], notAfter: number): Promise<BuiltBatch> {
  const hashes = await Promise.all(leaves.map((l) => leafHash(l.subject, l.kind)));
  const root = await merkleRoot(hashes);
  const scope: BatchScope = { batchId, root, size: hashes.length, notAfter };
  const scopeBytes = encodeJson({
    v: 1,
    batch_id: batchId,
    root: toBase64(root),
    size: hashes.length,
    not_after: notAfter,
  });
  return {
    scope,
    scopeBytes,
    proof: async (index: number) =>
      encodeJson({ v: 1, index, path: (await inclusionProof(hashes, index)).map((h) => toBase64(h)) }),
  };
}

/** One approver's signature over the scope bytes. */
export async function approveScope(
  approver: SigningKeyPair,
  scopeBytes: Uint8Array,
): Promise<{ key: Uint8Array; sig: Uint8Array }> {
  return {
    key: approver.publicKey,
    sig: await signEd25519(approver.privateKey, signedMessage("batch-approval", scopeBytes)),
  };
}

/** Encodes `Command.batch_approval`. */
export function encodeBatchApproval(
  scopeBytes: Uint8Array,
  approvals: readonly { key: Uint8Array; sig: Uint8Array }[],
): Uint8Array {
  return encodeJson({
    v: 1,
    scope: toBase64(scopeBytes),
    approvals: approvals.map((a) => ({ key: toBase64(a.key), sig: toBase64(a.sig) })),
  });
}

/**
 * Admits a destructive command with a `batch_id`, or throws {@link QuorumError} `BATCH_UNAPPROVED`: no approval or
 * proof, a scope for another batch or past its `not_after` (server time), fewer than the bundle's threshold of
 * distinct approver keys with a valid signature over the scope bytes, or a proof that does not prove this leaf.
 */
export async function verifyBatch(
  bundle: TrustBundle,
  batchId: string,
  leaf: BatchLeaf,
  approvalBytes: Uint8Array | undefined,
  proofBytes: Uint8Array | undefined,
  serverNowMs: number,
): Promise<BatchAdmission> {
  const refuse = (msg: string, cause?: unknown): never => {
    throw new QuorumError("BATCH_UNAPPROVED", `batch ${JSON.stringify(batchId)}: ${msg}`, { cause });
  };
  if (approvalBytes === undefined || approvalBytes.length === 0) refuse("no batch_approval");
  if (proofBytes === undefined || proofBytes.length === 0) refuse("no batch_proof");
  let scopeBytes: Uint8Array;
  let scope: BatchScope;
  let approvals: { key: Uint8Array; sig: Uint8Array }[];
  let index: number;
  let path: Uint8Array[];
  try {
    const a = decodeBoundedJson("batch_approval", approvalBytes!, MAX_APPROVAL_BYTES);
    if (a.v !== 1) throw new PkiFormatError("batch_approval.v: unsupported version");
    scopeBytes = fromBase64("batch_approval.scope", a.scope, MAX_APPROVAL_BYTES);
    const s = decodeBoundedJson("scope", scopeBytes, MAX_APPROVAL_BYTES);
    if (s.v !== 1) throw new PkiFormatError("scope.v: unsupported version");
    scope = {
      batchId: stringField("scope", s, "batch_id"),
      root: fromBase64("scope.root", s.root, 32),
      size: intField("scope", s, "size"),
      notAfter: intField("scope", s, "not_after"),
    };
    if (!Array.isArray(a.approvals) || a.approvals.length > MAX_APPROVALS) {
      throw new PkiFormatError(`batch_approval.approvals: expected at most ${MAX_APPROVALS} approvals`);
    }
    approvals = a.approvals.map((x: unknown, i: number) => {
      const o = (typeof x === "object" && x !== null ? x : {}) as Record<string, unknown>;
      return { key: fromBase64(`approvals[${i}].key`, o.key, 32), sig: fromBase64(`approvals[${i}].sig`, o.sig, 64) };
    });
    const p = decodeBoundedJson("batch_proof", proofBytes!, MAX_PROOF_BYTES);
    if (p.v !== 1) throw new PkiFormatError("batch_proof.v: unsupported version");
    index = intField("batch_proof", p, "index");
    if (!Array.isArray(p.path) || p.path.length > MAX_PROOF_HASHES) {
      throw new PkiFormatError("batch_proof.path: expected a list of hashes");
    }
    path = p.path.map((h: unknown, i: number) => fromBase64(`batch_proof.path[${i}]`, h, 32));
  } catch (e) {
    if (e instanceof PkiFormatError) refuse(e.message, e);
    throw e;
  }
  if (scope!.batchId !== batchId) refuse(`the approved scope is for batch ${JSON.stringify(scope!.batchId)}`);
  if (serverNowMs > scope!.notAfter) refuse(`the scope expired at ${scope!.notAfter}`);
  const counted: Uint8Array[] = [];
  for (const a of approvals!) {
    if (!bundle.approverKeys.some((k) => bytesEqual(k, a.key))) continue;
    if (counted.some((k) => bytesEqual(k, a.key))) continue;
    if (await verifyEd25519(a.key, a.sig, signedMessage("batch-approval", scopeBytes!))) counted.push(a.key);
  }
  if (counted.length < bundle.approvalThreshold) {
    refuse(`${counted.length} distinct approver signatures, ${bundle.approvalThreshold} needed`);
  }
  const lh = await leafHash(leaf.subject, leaf.kind);
  if (!await verifyInclusion(lh, index!, scope!.size, path!, scope!.root)) {
    refuse(`the proof does not prove leaf (${JSON.stringify(leaf.subject)}, ${leaf.kind}) in the approved scope`);
  }
  return { batchId, leaf: toHex(lh), scopeNotAfter: scope!.notAfter };
}
