/**
 * Public-key infrastructure of the daemon (WebCrypto Ed25519): signature envelopes with a purpose (`command`,
 * `desired-state`) verified over the exact bytes received, worker certificates chaining to the trust bundle's
 * command-signing roots, node-signed attested results and reports, and the destructive-batch quorum (approvals,
 * Merkle proofs, the persisted leaf and hourly ledger). The formats are documented in each file's module comment.
 *
 * ## Formats at a glance (the seed fixes the rules, not the encodings; these are bcd's)
 *
 * | What | Where | Bytes |
 * | --- | --- | --- |
 * | Signed message | every signature | `"bcd-sig-v1" 0x00 <purpose> 0x00 <exact bytes>`, the purpose chosen by the verifier |
 * | Worker certificate | inside an envelope | JSON `{v, statement: b64, issuer: b64 root key, sig}`; statement = JSON `{v, public_key, purposes, not_before, not_after, serial}` (ms), signed under `worker-cert` |
 * | Signature envelope | `Command.signature`, `DesiredState.signature` | JSON `{v, purpose, cert, sig}`, `sig` by the worker key over the body bytes |
 * | Batch approval | `Command.batch_approval` | JSON `{v, scope: b64, approvals: [{key, sig}]}`; scope = JSON `{v, batch_id, root, size, not_after}`, signed under `batch-approval` |
 * | Batch proof | `Command.batch_proof` | JSON `{v, index, path: [b64]}`, RFC 9162 inclusion of leaf SHA-256(0x00 ‖ u16 subject ‖ u16 kind) |
 * | `node_sig` | `CommandUpdate.node_sig` | node key under `command-result` over u16 id ‖ u16 state ‖ SHA-256(result value) |
 * | Attested report | `AttestedReport.node_sig` | node key under `attested-report` over the `ReportBody` bytes |
 *
 * The worker key's signature on every command (and signed desired state) is checked on a thread of its own, fed in
 * batches through shared memory (`ed25519_thread.ts`): the event loop pays for packing and one wake-up per batch,
 * not for the verification. A thread that fails gives no verdict (`VerifierThreadError`), never a pass.
 *
 * Every decoder bounds its input before parsing (envelope 8 KiB, statement 2 KiB, approval 16 KiB, proof 4 KiB);
 * a root signs worker certificates only (chain length one); a worker certificate's window is judged in server time
 * (the journal's time mark), so a gateway cannot wind the clock back into an old certificate. The quorum threshold is
 * the bundle's `approver_threshold`, and 0 (unset) means `min(2, approver keys)`.
 *
 * @module
 */
export {
  bytesEqual,
  ED25519_PUBLIC_KEY_BYTES,
  ED25519_SIGNATURE_BYTES,
  generateSigningKeyPair,
  importPublicKey,
  importSigningKeyPair,
  sha256,
  signEd25519,
  type SigningKeyPair,
  toHex,
  verifyEd25519,
} from "./ed25519.ts";
export { Ed25519Thread, VerifierThreadError, verifyEd25519Batched } from "./ed25519_thread.ts";
export { type Purpose, PURPOSES, signedMessage } from "./purpose.ts";
export { PkiFormatError } from "./codec.ts";
export { SignatureError, type SignatureFailure } from "./signature_error.ts";
export {
  EMPTY_TRUST_BUNDLE,
  enforcesQuorum,
  enforcesSignatures,
  makeTrustBundle,
  type TrustBundle,
} from "./trust_bundle.ts";
export {
  certificateFromJson,
  certificateToJson,
  issueWorkerCertificate,
  verifyWorkerCertificate,
  type WorkerCertificate,
  type WorkerCertStatement,
} from "./certificate.ts";
export { type Ed25519Verify, MAX_ENVELOPE_BYTES, signEnvelope, verifyEnvelope, type WorkerSigner } from "./envelope.ts";
export {
  resultStatement,
  signAttestedReport,
  signCommandResult,
  verifyAttestedReport,
  verifyCommandResult,
} from "./attest.ts";
export { inclusionProof, leafHash, merkleRoot, verifyInclusion } from "./merkle.ts";
export {
  approveScope,
  type BatchAdmission,
  type BatchLeaf,
  type BatchScope,
  buildBatch,
  type BuiltBatch,
  encodeBatchApproval,
  QuorumError,
  type QuorumReason,
  verifyBatch,
} from "./quorum.ts";
export {
  QUORUM_LEDGER_FILE,
  QuorumLedger,
  QuorumLedgerError,
  type QuorumTicket,
  writeFileDurable,
} from "./quorum_ledger.ts";
export { type AttestedReportWire, attestReport, openAttestedReport } from "./attested_report.ts";
