/**
 * The node's SecretRequest broker over its session (000 §Instances, user data): {@link SessionSecrets.fetch} sends a
 * `SecretRequest` (a fresh `request_id`, the purpose, the reference, the allocation and instance it is bound to) and
 * waits for the gateway's `SecretResponse` with that id. `OK` gives the secret, `REFUSED` a refusal (the control plane
 * will not release it), `UNAVAILABLE` — and no session, a session that closes before the answer, or no answer within
 * {@link SessionSecretsOptions.timeoutMs} — unavailability, which the caller retries on a later pass. A response nobody
 * waits for (a late answer, an unknown id) is dropped and logged without its secret; an answer with an unknown status
 * is unavailability. The secret is never logged.
 *
 * @module
 */
import { bcd } from "../../proto/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { SecretAnswer, SecretQuery, SecretSource } from "../converge/instances/user_data.ts";
import type { NodeFrameInit } from "./client.ts";

type SecretResponse = bcd.v1.SecretResponse.$Properties;

/** Options of {@link SessionSecrets}. */
export interface SessionSecretsOptions {
  /** How long a request waits for its answer (default 30 s). */
  readonly timeoutMs?: number;
  readonly log?: Logger;
}

/** The broker over the session; the agent attaches and detaches its sender as sessions come and go. */
export class SessionSecrets implements SecretSource {
  readonly #pending = new Map<string, (a: SecretAnswer) => void>();
  readonly #o: SessionSecretsOptions;
  #send: ((f: NodeFrameInit) => boolean) | undefined;

  constructor(opts: SessionSecretsOptions = {}) {
    this.#o = opts;
  }

  /** A session is up: requests go out through `send`. */
  attach(send: (f: NodeFrameInit) => boolean): void {
    this.#send = send;
  }

  /** The session closed: every waiting request is unavailable. */
  detach(reason: string): void {
    this.#send = undefined;
    for (const [id, done] of this.#pending) {
      this.#pending.delete(id);
      done({ status: "unavailable", message: `the session closed before the answer: ${reason}` });
    }
  }

  fetch(q: SecretQuery): Promise<SecretAnswer> {
    const send = this.#send;
    if (!send) return Promise.resolve({ status: "unavailable", message: "no session to the control plane" });
    const id = `secret-${crypto.randomUUID()}`;
    return new Promise<SecretAnswer>((resolve) => {
      const timer = setTimeout(() => {
        if (this.#pending.delete(id)) {
          resolve({ status: "unavailable", message: `no answer to SecretRequest ${id} within ${this.#timeout} ms` });
        }
      }, this.#timeout);
      this.#pending.set(id, (a) => {
        clearTimeout(timer);
        resolve(a);
      });
      const sent = send({
        secret_request: {
          request_id: id,
          purpose: q.purpose,
          ref: q.ref,
          allocation_id: q.allocationId,
          instance_id: q.instanceId,
          ...(q.commandId ? { command_id: q.commandId } : {}),
        },
      });
      if (!sent) this.#settle(id, { status: "unavailable", message: "the session could not take the request" });
      this.#o.log?.info(
        {
          request_id: id,
          purpose: q.purpose,
          ref: q.ref,
          allocation: q.allocationId,
          instance: q.instanceId,
          command_id: q.commandId,
        },
        "secret requested",
      );
    });
  }

  get #timeout(): number {
    return this.#o.timeoutMs ?? 30_000;
  }

  #settle(id: string, a: SecretAnswer): boolean {
    const done = this.#pending.get(id);
    if (!done) return false;
    this.#pending.delete(id);
    done(a);
    return true;
  }

  /** A `SecretResponse` from the gateway. */
  response(r: SecretResponse): void {
    const id = r.request_id ?? "";
    const S = bcd.v1.SecretResponse.Status;
    const message = r.message ?? "";
    const a: SecretAnswer = r.status === S.OK
      ? { status: "ok", secret: r.secret ?? new Uint8Array() }
      : r.status === S.REFUSED
      ? { status: "refused", message: message || "refused" }
      : { status: "unavailable", message: message || "the broker is unavailable" };
    if (!this.#settle(id, a)) {
      this.#o.log?.warn({ request_id: id, status: a.status }, "a SecretResponse nobody waits for; dropped");
    } else this.#o.log?.info({ request_id: id, status: a.status }, "secret answered");
  }
}
