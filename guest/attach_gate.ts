/**
 * The guest's side of the launch capability (`core/framing/attach.ts`): one gate per serving loop, which answers
 * Attach and tells whether the current epoch may be served.
 *
 * @module
 */
import {
  CAPABILITY_REFUSED,
  capabilityMatches,
  decodeAttach,
  encodeFrame,
  type Frame,
  Kind,
  parseCapability,
} from "../core/framing/mod.ts";
import type { Logger } from "../core/log/mod.ts";

/** Where the launch writes the capability in the VM's initramfs (`runtimes/vm/guest_initramfs.ts`). */
export const CAPABILITY_FILE = "/etc/bcd/launch-capability";

/** Reads the VM's launch capability: null when the file is absent (a guest that takes any host). */
export async function readCapability(path = CAPABILITY_FILE): Promise<Uint8Array | null> {
  try {
    return parseCapability(await Deno.readTextFile(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** Gates an epoch on the launch capability. */
export class AttachGate {
  #capability: Uint8Array | null;
  #attached: boolean;
  #log: Logger;
  #dropped = 0;

  constructor(capability: Uint8Array | null, log: Logger) {
    this.#capability = capability;
    this.#attached = capability === null;
    this.#log = log;
  }

  /** A reset ended the attachment: the next epoch attaches again. */
  reset(): void {
    this.#attached = this.#capability === null;
    this.#dropped = 0;
  }

  /**
   * Takes `f` when it is Attach (returns the answer to send) or when the epoch may not be served yet (returns
   * `"dropped"`); returns null for a message to serve.
   */
  take(f: Frame): Uint8Array | "dropped" | null {
    if (f.kind === Kind.Attach) {
      let a;
      try {
        a = decodeAttach(f.body);
      } catch (e) {
        this.#log.warn({ err: String(e) }, "an Attach that does not decode: dropped");
        return "dropped";
      }
      if (this.#capability === null || capabilityMatches(a.capability, this.#capability)) {
        this.#attached = true;
        return encodeFrame(Kind.Attached, a.nonce);
      }
      this.#attached = false;
      this.#log.warn({ reason: CAPABILITY_REFUSED }, "an attach without the launch capability: refused");
      return encodeFrame(Kind.AttachRefused, a.nonce);
    }
    if (this.#attached) return null;
    if (this.#dropped++ === 0) {
      this.#log.warn({ kind: f.kind }, "a message before the epoch attached with the launch capability: dropped");
    }
    return "dropped";
  }
}
