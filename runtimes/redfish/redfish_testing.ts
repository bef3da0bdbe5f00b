/**
 * Test support for the Redfish client and the `bmc.*` kinds: a clock whose `sleep` moves time forward at once and
 * records each wait (polling runs without waiting and its intervals can be asserted), a map-backed SecretSource, a
 * handler context for a kind and payload, and a PEM certificate's SHA-256.
 *
 * @module
 */
import type { Clock } from "../../core/clock.ts";
import { realClock } from "../../core/clock.ts";
import { commandBody } from "../../core/commands/command.ts";
import type { HandlerContext } from "../../core/commands/handlers.ts";
import type { SecretAnswer, SecretQuery, SecretSource } from "../../core/converge/instances/user_data.ts";
import { memoryLogger } from "../../core/log/mod.ts";
import { packPayload, type PayloadInit, type WireKind } from "../../proto/mod.ts";
import { certSha256 } from "./socket_transport.ts";

/** A clock for polling code: `sleep(ms)` adds `ms` to `monotonic()` and resolves at once. */
export function steppingClock(): Pick<Clock, "setTimer" | "sleep" | "monotonic"> & { slept: number[] } {
  let t = 0;
  const slept: number[] = [];
  return {
    slept,
    monotonic: () => t,
    sleep(ms) {
      slept.push(ms);
      t += ms;
      return Promise.resolve();
    },
    // Request timeouts stay real (a hang guard for a peer that stops answering), never asserted.
    setTimer: (ms, fn) => realClock.setTimer(ms, fn),
  };
}

/** A SecretSource over a map of references, keeping every query (the secrets themselves are not kept). */
export class MapSecrets implements SecretSource {
  readonly queries: SecretQuery[] = [];
  readonly refused = new Set<string>();
  constructor(readonly secrets: Map<string, string> = new Map()) {}

  /** Holds `{"username", "password"}` under `ref`. */
  put(ref: string, username: string | undefined, password: string): this {
    this.secrets.set(ref, JSON.stringify({ ...(username ? { username } : {}), password }));
    return this;
  }

  fetch(q: SecretQuery): Promise<SecretAnswer> {
    this.queries.push(q);
    if (this.refused.has(q.ref)) return Promise.resolve({ status: "refused", message: "not bound to this command" });
    const s = this.secrets.get(q.ref);
    return Promise.resolve(
      s === undefined
        ? { status: "unavailable", message: `no ${q.ref}` }
        : { status: "ok", secret: new TextEncoder().encode(s) },
    );
  }
}

/** A handler's context for `kind` with `payload`, a memory logger and its lines. */
export function bmcContext<K extends WireKind>(
  kind: K,
  payload: PayloadInit<K>,
  id = `cmd-${crypto.randomUUID()}`,
): { ctx: HandlerContext; lines: Record<string, unknown>[]; abort: AbortController } {
  const any = packPayload(kind, payload);
  const { logger, lines } = memoryLogger();
  const abort = new AbortController();
  return {
    ctx: {
      command: commandBody({ id, nodeId: "site-1", kind, payload: { typeUrl: any.type_url, value: any.value } }),
      signal: abort.signal,
      bootId: "boot-1",
      logger,
    },
    lines,
    abort,
  };
}

/** The lowercase hex SHA-256 of a PEM certificate's DER. */
export function pemSha256(pem: string): string {
  const b64 = pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  return certSha256(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
}
