/**
 * Public-key infrastructure of the daemon (WebCrypto Ed25519): signature envelopes with a purpose (`command`,
 * `desired-state`) verified over the exact bytes received, worker certificates chaining to the trust bundle's
 * command-signing roots, node-signed attested results and reports, and the destructive-batch quorum (approvals,
 * Merkle proofs, the persisted leaf and hourly ledger). The formats are documented in each file's module comment.
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
export { MAX_ENVELOPE_BYTES, signEnvelope, verifyEnvelope, type WorkerSigner } from "./envelope.ts";
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
