/**
 * The guest's side of the framing's channel gate (`core/framing/attach.ts`): one gate per serving loop (`serve` and
 * the layered worker alike), which runs the handshake that proves the VM's one secret (the launch capability, which
 * is also the channel key) and tells whether the current epoch may be served.
 *
 * @module
 */
import {
  CAPABILITY_REFUSED,
  decodeAttach,
  encodeFrame,
  encodeNoncePair,
  type Frame,
  FRAMING_AUTH_BYTES,
  framingProof,
  Kind,
  verifyFramingProof,
} from "../core/framing/mod.ts";
import type { Logger } from "../core/log/mod.ts";

type State =
  | { readonly s: "closed" }
  | { readonly s: "challenged"; readonly host: Uint8Array; readonly guest: Uint8Array }
  | { readonly s: "open" };

/** Gates an epoch on the VM's secret. */
export class AttachGate {
  readonly #key: Uint8Array | null;
  readonly #log: Logger;
  #state: State;
  #dropped = 0;

  /** `key` null: a guest that serves any host (every Attach is answered Attached). */
  constructor(key: Uint8Array | null, log: Logger) {
    this.#key = key;
    this.#log = log;
    this.#state = key === null ? { s: "open" } : { s: "closed" };
  }

  /** Whether the current epoch is attached (always, without a secret). */
  get open(): boolean {
    return this.#state.s === "open";
  }

  /** A reset ended the attachment: the next epoch attaches again. */
  reset(): void {
    this.#state = this.#key === null ? { s: "open" } : { s: "closed" };
    this.#dropped = 0;
  }

  /**
   * Takes `f` when it belongs to the handshake (returns the answer to send, or `"dropped"`) or when the epoch may not
   * be served yet (returns `"dropped"`); returns null for a message to serve.
   */
  take(f: Frame): Uint8Array | "dropped" | null {
    const key = this.#key;
    if (f.kind === Kind.Attach) {
      let host;
      try {
        host = decodeAttach(f.body);
      } catch (e) {
        this.#log.warn({ err: String(e) }, "an Attach that does not decode: dropped");
        return "dropped";
      }
      if (key === null) return encodeFrame(Kind.Attached, host);
      const guest = crypto.getRandomValues(new Uint8Array(FRAMING_AUTH_BYTES));
      this.#state = { s: "challenged", host, guest };
      return encodeFrame(Kind.AuthChallenge, encodeNoncePair(host, guest));
    }
    if (f.kind === Kind.AuthProof) {
      const st = this.#state;
      if (key === null || st.s !== "challenged") {
        this.#log.warn({ kind: f.kind }, "an AuthProof without a pending Attach: dropped");
        return "dropped";
      }
      if (!verifyFramingProof(key, "host", st.host, st.guest, f.body)) {
        this.#state = { s: "closed" };
        this.#log.warn({ reason: CAPABILITY_REFUSED }, "an attach that did not prove the VM's secret: refused");
        return encodeFrame(Kind.AttachRefused, st.host);
      }
      this.#state = { s: "open" };
      this.#dropped = 0;
      this.#log.info({ event: "framing_authenticated" }, "the host proved the VM's secret: attached");
      return encodeFrame(Kind.Attached, encodeNoncePair(st.host, framingProof(key, "guest", st.host, st.guest)));
    }
    if (this.#state.s === "open") return null;
    if (this.#dropped++ === 0) {
      this.#log.warn(
        { kind: f.kind, reason: "unauthenticated" },
        "a message before the epoch attached with the VM's secret: dropped",
      );
    }
    return "dropped";
  }
}
