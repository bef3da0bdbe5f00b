/**
 * Typed refusals of the images module: {@link UnsafeBundle} for a config bundle that fails the safety kernel
 * (seed 004 `ErrUnsafeBundle`), {@link ImageRefused} for a qcow2 image or overlay that fails the header checks
 * (seed 000 §Tenant images).
 *
 * @module
 */

/** Why the bundle safety kernel refused a tarball. Every refusal names one of these. */
export type UnsafeReason =
  | "wire-too-large" // compressed bytes over MAX_WIRE_BYTES
  | "not-gzip" // not a gzip stream at all (only gzip-compressed tar is accepted)
  | "bad-gzip" // a truncated gzip stream, a bad CRC or length, trailing bytes after the gzip member
  | "stream-too-large" // decompressed stream over MAX_TAR_BYTES
  | "too-many-files" // more than MAX_FILES members
  | "too-large" // regular members' sizes sum past MAX_BYTES
  | "truncated" // the tar ends inside a header, a member's data or without its end-of-archive marker
  | "bad-checksum" // a header block whose checksum does not match
  | "bad-header" // a malformed numeric field, extension header or PAX record, or trailing garbage
  | "bad-name" // an empty name, a NUL, invalid UTF-8, a name or component too long
  | "absolute" // a name starting with "/"
  | "drive" // a drive-relative or drive-absolute name ("C:x", "C:\\x")
  | "backslash" // a backslash anywhere in the name
  | "traversal" // a ".." component
  | "duplicate" // the same clean name twice
  | "conflict" // a member below a regular file, or a regular file where a directory is implied
  | "symlink"
  | "hardlink"
  | "device"
  | "fifo"
  | "sparse"
  | "unsupported-type"; // any other member type (global PAX header, volume label, GNU dumpdir, ...)

/** A bundle that fails the safety kernel (seed 004 `ErrUnsafeBundle`). Check errors are never wrapped in this. */
export class UnsafeBundle extends Error {
  override name = "UnsafeBundle";
  constructor(readonly reason: UnsafeReason, message: string, options?: ErrorOptions) {
    super(`unsafe bundle: ${message}`, options);
  }
}

/** Why a qcow2 image or an overlay was refused (seed 000 §Tenant images). */
export type ImageReason =
  | "malformed"
  | "backing-file"
  | "data-file"
  | "unknown-feature"
  | "encrypted"
  | "backing-mismatch";

/** A tenant image or instance overlay refused by the header checks. */
export class ImageRefused extends Error {
  override name = "ImageRefused";
  constructor(readonly reason: ImageReason, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
