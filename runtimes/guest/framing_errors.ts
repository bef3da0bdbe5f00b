/**
 * The host client's failures (seed 002 §Host program): the end of the client, after which every call fails,
 * and a receive that timed out, which keeps what arrived and leaves the client usable.
 *
 * @module
 */

/** Why the client ended. */
export type ClientEndReason =
  | "session" // the stream failed or ended
  | "send" // a send failed or timed out
  | "malformed" // a malformed message from the guest
  | "undecodable" // an answer whose body does not decode
  | "unexpected" // an answer of another kind than the request's
  | "late" // a request whose answer did not arrive in time
  | "credit" // the guest broke an execution's credit
  | "auth" // the guest did not prove the channel key
  | "refused" // the guest refused the launch capability on attach (capability-refused)
  | "closed"; // the caller closed it

/** The client ended; it and every later call fail with this. */
export class ClientEnded extends Error {
  override name = "ClientEnded";
  constructor(readonly reason: ClientEndReason, message: string, options?: ErrorOptions) {
    super(`${reason}: ${message}`, options);
  }
}

/** A receive that timed out; what arrived is kept and the client goes on. */
export class ReceiveTimeout extends Error {
  override name = "ReceiveTimeout";
}
