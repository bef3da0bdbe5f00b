/**
 * Signature envelopes: `Command.signature` and a signed `DesiredStateBody` carry one. Format (JSON, UTF-8):
 * `{"v":1,"purpose":"command"|"desired-state","cert":<worker certificate>,"sig":<b64 64 bytes>}`, where `sig` is the
 * worker key's Ed25519 signature over `signedMessage(purpose, <exact body bytes>)`. The verifier checks the bytes it
 * received, never a re-encoding, and builds the signed message from the purpose it expects. The worker key's signature
 * is checked through WebCrypto by default, which Deno runs off the event loop's thread. The process's Ed25519 thread
 * (`ed25519_thread.ts`, checks of one turn batched through shared memory) is the measured alternative a caller may
 * pass: in the same runs it cost the loop no less per settled command (−9 ± 14 µs, 15 alternating pairs on an
 * idle host), added ~77 µs to a lone check and 18–21 MiB once started, and production deliveries reach it one at a
 * time (1.2 checks per batch through the session), so it is not the default (issue 24).
 *
 * @module
 */
import { signEd25519, type SigningKeyPair, verifyEd25519 } from "./ed25519.ts";
import { decodeBoundedJson, encodeJson, fromBase64, PkiFormatError, toBase64 } from "./codec.ts";
import {
  certificateFromJson,
  certificateToJson,
  verifyWorkerCertificate,
  type WorkerCertificate,
} from "./certificate.ts";
import { type Purpose, signedMessage } from "./purpose.ts";
import { SignatureError } from "./signature_error.ts";

/** An Ed25519 verifier: a verdict, or a rejection when it cannot decide. */
export type Ed25519Verify = (publicKey: Uint8Array, signature: Uint8Array, message: Uint8Array) => Promise<boolean>;

/** The largest envelope decoded. */
export const MAX_ENVELOPE_BYTES = 8192;

/** A worker key with its certificate: what signs commands and specs. */
export interface WorkerSigner {
  readonly key: SigningKeyPair;
  readonly certificate: WorkerCertificate;
}

/** Signs `bytes` under `purpose`, returning the encoded envelope. */
export async function signEnvelope(signer: WorkerSigner, purpose: Purpose, bytes: Uint8Array): Promise<Uint8Array> {
  const sig = await signEd25519(signer.key.privateKey, signedMessage(purpose, bytes));
  return encodeJson({ v: 1, purpose, cert: certificateToJson(signer.certificate), sig: toBase64(sig) });
}

/**
 * Verifies an envelope over exactly `bytes` for `purpose` against `roots` at server time `nowMs`, returning the
 * worker certificate that signed. Throws {@link SignatureError}: `missing` (no or empty envelope), `malformed`,
 * `wrong-purpose` (an envelope or certificate for another purpose), `unknown-key`, `certificate-invalid`,
 * `certificate-expired`, `invalid` (the signature does not verify over these bytes). The worker key's signature goes
 * to `verify` (default: WebCrypto); when that rejects (e.g. `VerifierThreadError`: an Ed25519 thread failed), so does
 * this, with no verdict.
 */
export async function verifyEnvelope(
  roots: readonly Uint8Array[],
  purpose: Purpose,
  bytes: Uint8Array,
  envelope: Uint8Array | undefined,
  nowMs: number,
  verify: Ed25519Verify = verifyEd25519,
): Promise<WorkerCertificate> {
  if (envelope === undefined || envelope.length === 0) throw new SignatureError("missing", "no signature");
  let cert: WorkerCertificate;
  let sig: Uint8Array;
  let claimed: unknown;
  try {
    const o = decodeBoundedJson("envelope", envelope, MAX_ENVELOPE_BYTES);
    if (o.v !== 1) throw new PkiFormatError("envelope.v: unsupported version");
    claimed = o.purpose;
    cert = certificateFromJson(o.cert);
    sig = fromBase64("envelope.sig", o.sig, 64);
  } catch (e) {
    if (e instanceof PkiFormatError) throw new SignatureError("malformed", e.message, { cause: e });
    throw e;
  }
  if (claimed !== purpose) {
    throw new SignatureError("wrong-purpose", `envelope for ${JSON.stringify(claimed)}, expected "${purpose}"`);
  }
  await verifyWorkerCertificate(roots, cert, purpose, nowMs);
  if (!await verify(cert.statement.publicKey, sig, signedMessage(purpose, bytes))) {
    throw new SignatureError("invalid", `the ${purpose} signature does not verify over the bytes received`);
  }
  return cert;
}
