/**
 * Exec tickets (000 §Break-glass SSH and tunnel keys, §The journal): the JWT an `OpenTunnel` carries, verified
 * against the JWKS the access section holds. The checks, in order, each refusal with its reason:
 *
 * | check                                                                        | reason                   |
 * | ---------------------------------------------------------------------------- | ------------------------ |
 * | compact JWS of three base64url parts, at most {@link MAX_TICKET} characters, JSON header and claims | `ticket-malformed` |
 * | header `alg` is `EdDSA` or `ES256`                                           | `ticket-alg`             |
 * | header `kid` names a key of the JWKS held                                    | `unknown-kid`            |
 * | the key's algorithm is the header's                                          | `ticket-alg`             |
 * | the signature verifies                                                       | `ticket-bad-signature`   |
 * | `exp` is after now                                                           | `ticket-expired`         |
 * | `nbf`, when present, is not after now                                        | `ticket-not-yet-valid`   |
 * | `aud` is (or, as a list, holds) this node's id                               | `ticket-wrong-audience`  |
 * | `instance` is the instance the `OpenTunnel` names                            | `ticket-wrong-instance`  |
 * | `port` is the port the `OpenTunnel` names                                    | `ticket-wrong-port`      |
 * | `jti` is a string of 1 to 256 characters                                     | `ticket-malformed`       |
 *
 * "Now" is server time: the node's clock plus the `Welcome` offset, and never before the server time mark, so a
 * gateway that winds the clock back cannot revive an expired ticket. The `jti` is then recorded in the journal
 * until `exp` (`ticket-replayed`, `tickets-full`): that step is the tunnel's, after these checks.
 *
 * @module
 */
import type { JwksHolder, TicketAlg } from "./jwks.ts";

/** The longest ticket accepted. */
export const MAX_TICKET = 8192;

/** Why a ticket (or its tunnel) is refused. */
export type TicketRefusal =
  | "ticket-malformed"
  | "ticket-alg"
  | "unknown-kid"
  | "ticket-bad-signature"
  | "ticket-expired"
  | "ticket-not-yet-valid"
  | "ticket-wrong-audience"
  | "ticket-wrong-instance"
  | "ticket-wrong-port"
  | "ticket-replayed"
  | "tickets-full";

/** A refused ticket. */
export class TicketRefused extends Error {
  override name = "TicketRefused";
  constructor(readonly reason: TicketRefusal, message: string, options?: ErrorOptions) {
    super(`${reason}: ${message}`, options);
  }
}

/** A verified ticket's claims. */
export interface TicketClaims {
  readonly jti: string;
  /** Expiry, ms since the epoch. */
  readonly expiresAt: number;
  readonly instance: string;
  readonly port: number;
}

/** What the ticket must say. */
export interface TicketExpectation {
  readonly nodeId: string;
  readonly instance: string;
  readonly port: number;
  /** Server time now, ms (already floored at the server time mark). */
  readonly now: number;
}

const _B64URL = /^[A-Za-z0-9_-]*$/;

function _b64url(s: string, what: string): Uint8Array<ArrayBuffer> {
  if (!_B64URL.test(s) || s.length % 4 === 1) throw new TicketRefused("ticket-malformed", `${what} is not base64url`);
  const pad = s.replaceAll("-", "+").replaceAll("_", "/") + "===".slice((s.length + 3) % 4);
  return Uint8Array.from(atob(pad), (c) => c.charCodeAt(0));
}

function _json(s: string, what: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(_b64url(s, what)));
  } catch (e) {
    if (e instanceof TicketRefused) throw e;
    if (e instanceof SyntaxError || e instanceof TypeError) {
      throw new TicketRefused("ticket-malformed", `${what} is not JSON`, { cause: e });
    }
    throw e;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw new TicketRefused("ticket-malformed", `${what} is not an object`);
  }
  return v as Record<string, unknown>;
}

function _seconds(v: unknown, what: string): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || v > 1e11) {
    throw new TicketRefused("ticket-malformed", `${what} is not a NumericDate`);
  }
  return v * 1000;
}

const _PARAMS: Record<TicketAlg, AlgorithmIdentifier | EcdsaParams> = {
  EdDSA: { name: "Ed25519" },
  ES256: { name: "ECDSA", hash: "SHA-256" },
};

/** Verifies `ticket` against `jwks` and `want`; throws {@link TicketRefused} naming the first check it fails. */
export async function verifyTicket(ticket: string, jwks: JwksHolder, want: TicketExpectation): Promise<TicketClaims> {
  if (ticket.length > MAX_TICKET) {
    throw new TicketRefused("ticket-malformed", `ticket of ${ticket.length} characters passes ${MAX_TICKET}`);
  }
  const parts = ticket.split(".");
  if (parts.length !== 3) throw new TicketRefused("ticket-malformed", "ticket is not three dot-separated parts");
  const [h, p, s] = parts as [string, string, string];
  const header = _json(h, "header");
  const claims = _json(p, "claims");
  const sig = _b64url(s, "signature");
  const alg = header.alg;
  if (alg !== "EdDSA" && alg !== "ES256") {
    throw new TicketRefused("ticket-alg", `alg ${JSON.stringify(alg)} is not EdDSA or ES256`);
  }
  const kid = header.kid;
  const key = typeof kid === "string" ? jwks.key(kid) : undefined;
  if (!key) throw new TicketRefused("unknown-kid", `kid ${JSON.stringify(kid)} is not in the JWKS held`);
  if (key.alg !== alg) throw new TicketRefused("ticket-alg", `key ${key.kid} is ${key.alg}, the ticket says ${alg}`);
  const signed = new TextEncoder().encode(`${h}.${p}`);
  if (!(await crypto.subtle.verify(_PARAMS[key.alg], key.key, sig, signed))) {
    throw new TicketRefused("ticket-bad-signature", `signature does not verify with key ${key.kid}`);
  }
  const exp = _seconds(claims.exp, "exp");
  if (exp <= want.now) {
    throw new TicketRefused(
      "ticket-expired",
      `expired at ${new Date(exp).toISOString()}, server time is ${new Date(want.now).toISOString()}`,
    );
  }
  if (claims.nbf !== undefined) {
    const nbf = _seconds(claims.nbf, "nbf");
    if (nbf > want.now) {
      throw new TicketRefused(
        "ticket-not-yet-valid",
        `not before ${new Date(nbf).toISOString()}, server time is ${new Date(want.now).toISOString()}`,
      );
    }
  }
  const aud = claims.aud;
  if (!(aud === want.nodeId || (Array.isArray(aud) && aud.includes(want.nodeId)))) {
    throw new TicketRefused("ticket-wrong-audience", `aud ${JSON.stringify(aud)} is not this node (${want.nodeId})`);
  }
  if (claims.instance !== want.instance) {
    throw new TicketRefused(
      "ticket-wrong-instance",
      `instance ${JSON.stringify(claims.instance)} is not ${JSON.stringify(want.instance)}`,
    );
  }
  if (claims.port !== want.port) {
    throw new TicketRefused("ticket-wrong-port", `port ${JSON.stringify(claims.port)} is not ${want.port}`);
  }
  const jti = claims.jti;
  if (typeof jti !== "string" || jti.length === 0 || jti.length > 256) {
    throw new TicketRefused("ticket-malformed", "jti is not a string of 1 to 256 characters");
  }
  return { jti, expiresAt: exp, instance: want.instance, port: want.port };
}
