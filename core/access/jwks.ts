/**
 * The exec-ticket JWKS (RFC 7517) every `OpenTunnel` is verified against: the access converger takes a new one on
 * every pass ({@link JwksHolder.take}); the tunnel code looks keys up by `kid` ({@link JwksHolder.key}).
 *
 * Two kinds of key verify tickets: `OKP`/`Ed25519` (alg `EdDSA`) and `EC`/`P-256` (alg `ES256`). A key of another
 * kind, or one whose `use` is not `sig`, is skipped (it can never verify a ticket, so a ticket naming it is refused
 * `unknown-kid`); a key of a supported kind that does not import, a missing or repeated `kid`, or a set that is not
 * JSON makes the whole JWKS invalid ({@link JwksInvalid}) and the holder then holds no key: no tunnel opens on a
 * half-read set.
 *
 * @module
 */
import { MAX_JWKS_BYTES } from "./section.ts";

/** The most keys a JWKS may carry. */
export const MAX_JWKS_KEYS = 64;

/** The two ticket algorithms. */
export type TicketAlg = "EdDSA" | "ES256";

/** A key that verifies tickets. */
export interface TicketKey {
  readonly kid: string;
  readonly alg: TicketAlg;
  readonly key: CryptoKey;
}

/** A JWKS that cannot be held. */
export class JwksInvalid extends Error {
  override name = "JwksInvalid";
}

function _str(o: Record<string, unknown>, k: string, i: number): string {
  const v = o[k];
  if (typeof v !== "string" || v.length === 0 || v.length > 512) {
    throw new JwksInvalid(`keys[${i}].${k} is not a string of 1 to 512 characters`);
  }
  return v;
}

/** Parses a JWKS into its ticket keys; throws {@link JwksInvalid}. The empty string is the empty set. */
export async function parseJwks(text: string): Promise<TicketKey[]> {
  if (text === "") return [];
  if (text.length > MAX_JWKS_BYTES) throw new JwksInvalid(`JWKS of ${text.length} bytes passes ${MAX_JWKS_BYTES}`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    if (e instanceof SyntaxError) throw new JwksInvalid(`JWKS is not JSON: ${e.message}`, { cause: e });
    throw e;
  }
  const keys = (doc as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new JwksInvalid("JWKS has no keys array");
  if (keys.length > MAX_JWKS_KEYS) throw new JwksInvalid(`JWKS holds ${keys.length} keys (at most ${MAX_JWKS_KEYS})`);
  const out: TicketKey[] = [];
  const kids = new Set<string>();
  for (const [i, raw] of keys.entries()) {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new JwksInvalid(`keys[${i}] is not an object`);
    }
    const k = raw as Record<string, unknown>;
    const kid = _str(k, "kid", i);
    if (kids.has(kid)) throw new JwksInvalid(`kid ${JSON.stringify(kid)} appears twice`);
    kids.add(kid);
    if (k.use !== undefined && k.use !== "sig") continue;
    let alg: TicketAlg;
    let params: EcKeyImportParams | Algorithm;
    const jwk: JsonWebKey = { kty: _str(k, "kty", i) };
    if (k.kty === "OKP" && k.crv === "Ed25519") {
      alg = "EdDSA";
      params = { name: "Ed25519" };
      Object.assign(jwk, { crv: "Ed25519", x: _str(k, "x", i) });
    } else if (k.kty === "EC" && k.crv === "P-256") {
      alg = "ES256";
      params = { name: "ECDSA", namedCurve: "P-256" };
      Object.assign(jwk, { crv: "P-256", x: _str(k, "x", i), y: _str(k, "y", i) });
    } else continue;
    if (k.alg !== undefined && k.alg !== alg) {
      throw new JwksInvalid(`keys[${i}] (${kid}) says alg ${JSON.stringify(k.alg)} for a ${alg} key`);
    }
    try {
      out.push({ kid, alg, key: await crypto.subtle.importKey("jwk", jwk, params, false, ["verify"]) });
    } catch (e) {
      if (e instanceof DOMException || e instanceof TypeError) {
        throw new JwksInvalid(`keys[${i}] (${kid}) does not import: ${e.message}`, { cause: e });
      }
      throw e;
    }
  }
  return out;
}

/** The JWKS held now; replaced on every pass. */
export class JwksHolder {
  #text = "";
  #keys = new Map<string, TicketKey>();
  #taken = 0;

  /** How many times a JWKS was taken (one per pass). */
  get taken(): number {
    return this.#taken;
  }

  /** The text of the JWKS held. */
  get text(): string {
    return this.#text;
  }

  /** Takes `text` as the JWKS; on {@link JwksInvalid} the holder holds no key and rethrows. */
  async take(text: string): Promise<void> {
    this.#taken++;
    if (text === this.#text) return;
    try {
      const keys = await parseJwks(text);
      this.#keys = new Map(keys.map((k) => [k.kid, k]));
      this.#text = text;
    } catch (e) {
      this.#keys = new Map();
      this.#text = "";
      throw e;
    }
  }

  /** The key with `kid`, if held. */
  key(kid: string): TicketKey | undefined {
    return this.#keys.get(kid);
  }
}
