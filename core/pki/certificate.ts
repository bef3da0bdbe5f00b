/**
 * Worker certificates: how a worker key chains to a command-signing root.
 *
 * Format (JSON, UTF-8). A root signs a *statement*
 * `{"v":1,"public_key":<b64 32 bytes>,"purposes":["command","desired-state"],"not_before":<unix ms>,
 * "not_after":<unix ms>,"serial":<string>}` under purpose `worker-cert`; the certificate carries the statement's
 * exact bytes, so it is verified as received and never re-encoded:
 * `{"v":1,"statement":<b64 statement bytes>,"issuer":<b64 root public key>,"sig":<b64 64 bytes>}`.
 * The chain has one link (root → worker). The validity window is judged in server time (the time mark).
 *
 * @module
 */
import {
  bytesEqual,
  ED25519_PUBLIC_KEY_BYTES,
  signEd25519,
  type SigningKeyPair,
  toHex,
  verifyEd25519,
} from "./ed25519.ts";
import { decodeBoundedJson, encodeJson, fromBase64, intField, PkiFormatError, stringField, toBase64 } from "./codec.ts";
import { type Purpose, PURPOSES, signedMessage } from "./purpose.ts";
import { SignatureError } from "./signature_error.ts";

/** The largest statement accepted. */
export const MAX_STATEMENT_BYTES = 2048;

/**
 * Root signatures already verified, keyed by issuer, signature and the exact statement bytes, so a worker's
 * certificate is checked once rather than on every command. Only the signature is cached: the issuer's membership in
 * the roots, the purposes and the validity window are judged on every call.
 */
const _verifiedCerts = new Set<string>();
const MAX_VERIFIED_CERTS = 64;
/** Certificate objects whose root signature verified (those {@link certificateFromJson} hands out again). */
const _verifiedObjects = new WeakSet<WorkerCertificate>();

/**
 * Certificates decoded, by their three base64 fields: every command of a worker embeds the same certificate, and
 * decoding is a pure function of those strings, so the second command reuses the first one's object (and with it
 * the verified mark) instead of decoding base64 and JSON again. Bounded like the signature cache.
 */
const _decodedCerts = new Map<string, WorkerCertificate>();

/** What a root vouches for. */
export interface WorkerCertStatement {
  readonly publicKey: Uint8Array;
  readonly purposes: readonly Purpose[];
  readonly notBefore: number;
  readonly notAfter: number;
  readonly serial: string;
}

/** A decoded certificate; `statementBytes` are the bytes the issuer signed. */
export interface WorkerCertificate {
  readonly statementBytes: Uint8Array;
  readonly statement: WorkerCertStatement;
  readonly issuer: Uint8Array;
  readonly signature: Uint8Array;
}

/** Issues a certificate for `statement`, signed by `root` (used by the testbed gateway and tests). */
export async function issueWorkerCertificate(
  root: SigningKeyPair,
  statement: WorkerCertStatement,
): Promise<WorkerCertificate> {
  const statementBytes = encodeJson({
    v: 1,
    public_key: toBase64(statement.publicKey),
    purposes: statement.purposes,
    not_before: statement.notBefore,
    not_after: statement.notAfter,
    serial: statement.serial,
  });
  const signature = await signEd25519(root.privateKey, signedMessage("worker-cert", statementBytes));
  return { statementBytes, statement, issuer: root.publicKey, signature };
}

/** The certificate as the JSON object an envelope embeds. */
export function certificateToJson(cert: WorkerCertificate): Record<string, unknown> {
  return {
    v: 1,
    statement: toBase64(cert.statementBytes),
    issuer: toBase64(cert.issuer),
    sig: toBase64(cert.signature),
  };
}

/** Decodes a certificate object; throws {@link PkiFormatError}. The signature is not checked here. */
export function certificateFromJson(obj: unknown): WorkerCertificate {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) throw new PkiFormatError("cert: not an object");
  const o = obj as Record<string, unknown>;
  if (o.v !== 1) throw new PkiFormatError("cert.v: unsupported version");
  const key = typeof o.statement === "string" && typeof o.issuer === "string" && typeof o.sig === "string"
    ? `${o.statement}.${o.issuer}.${o.sig}`
    : undefined;
  const seen = key === undefined ? undefined : _decodedCerts.get(key);
  if (seen !== undefined) return seen;
  const cert = _decodeCertificate(o);
  if (key !== undefined) {
    if (_decodedCerts.size >= MAX_VERIFIED_CERTS) _decodedCerts.delete(_decodedCerts.keys().next().value!);
    _decodedCerts.set(key, cert);
  }
  return cert;
}

function _decodeCertificate(o: Record<string, unknown>): WorkerCertificate {
  const statementBytes = fromBase64("cert.statement", o.statement, MAX_STATEMENT_BYTES);
  const issuer = fromBase64("cert.issuer", o.issuer, ED25519_PUBLIC_KEY_BYTES);
  const signature = fromBase64("cert.sig", o.sig, 64);
  const s = decodeBoundedJson("statement", statementBytes, MAX_STATEMENT_BYTES);
  if (s.v !== 1) throw new PkiFormatError("statement.v: unsupported version");
  const publicKey = fromBase64("statement.public_key", s.public_key, ED25519_PUBLIC_KEY_BYTES);
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES) throw new PkiFormatError("statement.public_key: not 32 bytes");
  if (!Array.isArray(s.purposes) || s.purposes.length > PURPOSES.length) {
    throw new PkiFormatError("statement.purposes: expected a list of purposes");
  }
  const purposes: Purpose[] = [];
  for (const p of s.purposes) {
    if (typeof p !== "string" || !PURPOSES.includes(p as Purpose)) {
      throw new PkiFormatError(`statement.purposes: unknown purpose ${JSON.stringify(p)}`);
    }
    purposes.push(p as Purpose);
  }
  const statement: WorkerCertStatement = {
    publicKey,
    purposes,
    notBefore: intField("statement", s, "not_before"),
    notAfter: intField("statement", s, "not_after"),
    serial: stringField("statement", s, "serial"),
  };
  return { statementBytes, statement, issuer, signature };
}

/**
 * Checks that `cert` chains to one of `roots`, is valid at `nowMs` (server time) and allows `purpose`.
 * Throws {@link SignatureError}: `unknown-key` for an issuer that is not a root, `certificate-invalid` for a bad root
 * signature, `wrong-purpose`, `certificate-expired`.
 */
export async function verifyWorkerCertificate(
  roots: readonly Uint8Array[],
  cert: WorkerCertificate,
  purpose: Purpose,
  nowMs: number,
): Promise<void> {
  if (!roots.some((r) => bytesEqual(r, cert.issuer))) {
    throw new SignatureError("unknown-key", "the worker certificate's issuer is not a command-signing root");
  }
  const cacheKey = _verifiedObjects.has(cert)
    ? undefined
    : `${toHex(cert.issuer)}:${toHex(cert.signature)}:${toHex(cert.statementBytes)}`;
  if (cacheKey !== undefined && !_verifiedCerts.has(cacheKey)) {
    if (!await verifyEd25519(cert.issuer, cert.signature, signedMessage("worker-cert", cert.statementBytes))) {
      throw new SignatureError(
        "certificate-invalid",
        "the root's signature over the worker certificate does not verify",
      );
    }
    if (_verifiedCerts.size >= MAX_VERIFIED_CERTS) _verifiedCerts.delete(_verifiedCerts.values().next().value!);
    _verifiedCerts.add(cacheKey);
  }
  _verifiedObjects.add(cert);
  if (cert.statement.purposes.length === 0 || cert.statement.purposes.includes("worker-cert")) {
    throw new SignatureError("certificate-invalid", "a worker certificate must name purposes and may not issue others");
  }
  if (!cert.statement.purposes.includes(purpose)) {
    throw new SignatureError("wrong-purpose", `the worker certificate does not allow purpose "${purpose}"`);
  }
  if (nowMs < cert.statement.notBefore || nowMs > cert.statement.notAfter) {
    throw new SignatureError(
      "certificate-expired",
      `server time ${nowMs} is outside the worker certificate's window [${cert.statement.notBefore}, ${cert.statement.notAfter}]`,
    );
  }
}
