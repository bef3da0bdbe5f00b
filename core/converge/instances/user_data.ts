/**
 * User data is never in the spec (000 §Instances): the converger fetches it with a `SecretRequest` bound to the
 * instance's allocation (purpose `user-data`, the spec's `user_data_ref`) before it defines the domain. The
 * {@link SecretSource} port answers with the secret, a refusal (the control plane will not release it: the instance
 * fails `user-data-refused`) or unavailability (no session, no answer, the broker down: the instance waits and the
 * section stays `PROGRESSING`). `core/session/secrets.ts` implements it over the node's session.
 *
 * @module
 */

/** What a secret is asked for with. */
export interface SecretQuery {
  /** `user-data`, `identity-rebind`, `telemetry-headers`, `bmc-credential`. */
  readonly purpose: string;
  readonly ref: string;
  readonly allocationId: string;
  readonly instanceId: string;
  /** For a command's secret (`bmc-credential`): the command it is bound to. */
  readonly commandId?: string;
}

/** The broker's answer. */
export type SecretAnswer =
  | { readonly status: "ok"; readonly secret: Uint8Array }
  | { readonly status: "refused"; readonly message: string }
  | { readonly status: "unavailable"; readonly message: string };

/** Where secrets come from (the session's SecretRequest broker). Never throws: every failure is an answer. */
export interface SecretSource {
  fetch(q: SecretQuery): Promise<SecretAnswer>;
}

/** The reason of an instance whose user data the control plane refused. */
export const USER_DATA_REFUSED = "user-data-refused";

/** The most bytes of user data a seed carries (a NoCloud `user-data` far beyond any cloud's own limit). */
export const MAX_USER_DATA_BYTES = 1024 * 1024;

/** The wait message of an instance whose user data (or snapshot) has not come yet. */
export const WAITING_FOR_USER_DATA = "waiting for the user data or snapshot";
