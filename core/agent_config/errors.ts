/**
 * How config delivery fails, by name (seed 004 §(d), §Global Constraints): the host's own refusals before the push,
 * and the guest's answers mapped one to one. The seed maps only `unimplemented` by name (`ErrGuestImageTooOld`,
 * "guest image too old"), and fails Provision closed; the other guest codes keep their meaning here so a caller can
 * tell a bad bundle from a full tmpfs.
 *
 * @module
 */

/** Why a delivery failed. */
export type ConfigDeliveryCode =
  /** The control plane could not be asked, or answered with an error. */
  | "fetch-failed"
  /** The bundle breaks the host's schema (never pushed). */
  | "bundle-schema"
  /** The bundle is beyond the wire cap, or the safety kernel refuses it on the host (never pushed). */
  | "bundle-unsafe"
  /** The guest answered `unimplemented`: its image predates config delivery. */
  | "guest-image-too-old"
  /** The guest answered `invalid-argument`: frame order, the version, or an unsafe bundle. */
  | "install-invalid"
  /** The guest answered `resource-exhausted`: wire bytes beyond its cap. */
  | "install-too-large"
  /** The guest answered `failed-precondition`: not provisioned (its root not ready). */
  | "guest-not-provisioned"
  /** The guest answered `internal`: e.g. its tmpfs is full (the seed's accepted self-DoS). */
  | "install-internal"
  /** The channel to the guest failed. */
  | "guest-unreachable"
  /** The reload after a refresh failed (the version does not advance). */
  | "reload-failed";

/** A failed provision or refresh. */
export class ConfigDeliveryError extends Error {
  override name = "ConfigDeliveryError";
  constructor(readonly code: ConfigDeliveryCode, message: string, options?: ErrorOptions) {
    super(`${code}: ${message}`, options);
  }
}

/** The guest's install codes (framing kind 35) and what the host makes of each. */
export const GUEST_CODE_MAP: Readonly<Record<string, ConfigDeliveryCode>> = {
  "unimplemented": "guest-image-too-old",
  "invalid-argument": "install-invalid",
  "resource-exhausted": "install-too-large",
  "failed-precondition": "guest-not-provisioned",
  "internal": "install-internal",
};

/** The error for a guest's install code; `unimplemented` reads "guest image too old" as the seed says. */
export function guestInstallError(code: string, problem: string, cause?: unknown): ConfigDeliveryError {
  const mapped = GUEST_CODE_MAP[code] ?? "install-internal";
  const what = mapped === "guest-image-too-old" ? "guest image too old" : `the guest refused the install (${code})`;
  return new ConfigDeliveryError(mapped, `installing agent config: ${what}: ${problem}`, { cause });
}
