/**
 * The `AllocationFailed` reasons of 000 §Device assignments, and the typed error that carries one.
 *
 * @module
 */

/** The reasons an assignment fails with. `invalid-assignment` is bcd's own: an allocation id it cannot name files with, a malformed env line or cpulist. */
export type AllocationFailureReason =
  | "overlap"
  | "device-missing"
  | "unsupported-binding"
  | "unsupported-device"
  | "resources-exhausted"
  | "invalid-assignment";

/** A rule refused an assignment: it fails with `reason`, terminally at this generation. */
export class AllocationRefused extends Error {
  override name = "AllocationRefused";
  constructor(readonly reason: AllocationFailureReason, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
