/**
 * Which session and join URLs the node uses (issue 22, item 2): `wss:` for the session and `https:` for join, so the
 * token, the node's proofs and every frame travel under TLS; plain `ws:` / `http:` only to a loopback address
 * (`127.0.0.0/8`, `::1`, `localhost`) — the testbed and the demo. Anything else is refused before a connection is
 * opened, saying why.
 *
 * @module
 */

/** A URL the node refuses to use. */
export class UrlRefused extends Error {
  override name = "UrlRefused";
  readonly reason = "insecure-url";
}

/** What the URL is for. */
export type TransportUse = "session" | "join";

const SECURE: Record<TransportUse, string> = { session: "wss:", join: "https:" };
const PLAIN: Record<TransportUse, string> = { session: "ws:", join: "http:" };

/** True for `localhost`, `127.0.0.0/8` and `::1`. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  if (h.toLowerCase() === "localhost") return true;
  if (h === "::1") return true; // URL parsing compresses every spelling of ::1 to this
  // Four dotted decimal octets of one to three digits, each at most 255, the first 127. Read by hand: the agents check
  // their session URL before the first Hello, and a regular expression's compile cost ~1 ms of it (issue 24).
  const octets = h.split(".");
  return octets.length === 4 && octets[0] === "127" && octets.every(_isOctet);
}

function _isOctet(s: string): boolean {
  if (s.length < 1 || s.length > 3) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return Number(s) <= 255;
}

/**
 * Checks `url` for `use`: returns it parsed, or throws {@link UrlRefused} naming the URL and the rule.
 *
 * @example
 * ```ts
 * checkTransportUrl("wss://gw.example/v1/session", "session"); // ok
 * checkTransportUrl("ws://127.0.0.1:8080/v1/session", "session"); // ok: loopback
 * checkTransportUrl("ws://gw.example/v1/session", "session"); // throws UrlRefused
 * ```
 */
export function checkTransportUrl(url: string, use: TransportUse): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch (e) {
    throw new UrlRefused(`the ${use} URL ${JSON.stringify(url)} is not a URL`, { cause: e });
  }
  if (u.protocol === SECURE[use]) return u;
  if (u.protocol === PLAIN[use]) {
    if (isLoopbackHost(u.hostname)) return u;
    throw new UrlRefused(
      `the ${use} URL ${url} is refused: ${PLAIN[use]} without TLS is allowed only to a loopback address ` +
        `(127.0.0.0/8, ::1, localhost); use ${SECURE[use]}`,
    );
  }
  throw new UrlRefused(`the ${use} URL ${url} is refused: the scheme must be ${SECURE[use]}`);
}
