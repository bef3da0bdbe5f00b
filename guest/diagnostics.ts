/**
 * How the guest agent's serving ends: 0 once the host stopped it (or the stream ended at a message boundary),
 * otherwise a failure with the problem, which the CLI prints on standard error before it exits with 1.
 *
 * @module
 */

/** The end of serving. */
export type ServeEnd =
  | { readonly ok: true; readonly reason: "stopped" | "closed" }
  | { readonly ok: false; readonly problem: string };

/** A refusal of a message that this guest does not accept; serving ends with it. */
export class ServeRefused extends Error {
  override name = "ServeRefused";
}
