/**
 * The error every signature check raises: the seed's reason plus a detail that says which part failed.
 *
 * @module
 */

/** Which part of a signature check failed. */
export type SignatureFailure =
  | "missing"
  | "malformed"
  | "unknown-key"
  | "wrong-purpose"
  | "certificate-invalid"
  | "certificate-expired"
  | "invalid";

/** A refused signature; `reason` is the seed's `BAD_SIGNATURE`. */
export class SignatureError extends Error {
  override name = "SignatureError";
  readonly reason = "BAD_SIGNATURE";
  constructor(readonly failure: SignatureFailure, message: string, options?: ErrorOptions) {
    super(`${failure}: ${message}`, options);
  }
}
