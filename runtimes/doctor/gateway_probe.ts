/**
 * Whether the gateway can be reached from here, and with TLS whether its certificate is one this host trusts: a TCP
 * connection to the session URL's host and port and, for `wss:`/`https:`, a TLS handshake against the system roots
 * plus `[gateway] ca_file`. Nothing is sent after the handshake (no session is opened). Plain `ws:`/`http:` is only
 * allowed to loopback (the session's own URL policy), so it gets a TCP connection alone.
 *
 * @module
 */
import type { GatewayFound } from "../../core/doctor/agent_checks.ts";

/** Options of {@link probeGateway}. */
export interface GatewayProbeOptions {
  /** PEM CA certificates beyond the system's (`[gateway] ca_file`). */
  readonly caCerts?: readonly string[];
  /** The connect and handshake bound (default 10 s). */
  readonly timeoutMs?: number;
}

class _ProbeTimeout extends Error {
  override name = "ProbeTimeout";
}

/** Probes `url` (a session or join URL); never throws for what the network answers. */
export async function probeGateway(url: string, opts: GatewayProbeOptions = {}): Promise<GatewayFound> {
  let u: URL;
  try {
    u = new URL(url);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    return { url, ok: false, tls: false, error: "not a URL" };
  }
  const tls = u.protocol === "wss:" || u.protocol === "https:";
  if (!tls && u.protocol !== "ws:" && u.protocol !== "http:") {
    return { url, ok: false, tls: false, error: `scheme ${u.protocol} is not wss:, https:, ws: or http:` };
  }
  const hostname = u.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = u.port !== "" ? Number(u.port) : tls ? 443 : 80;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let expired = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new _ProbeTimeout(`no answer in ${timeoutMs} ms`));
    }, timeoutMs);
  });
  let conn: Deno.Conn | undefined;
  try {
    const connecting = tls
      ? Deno.connectTls({ hostname, port, ...(opts.caCerts ? { caCerts: [...opts.caCerts] } : {}) })
      : Deno.connect({ hostname, port });
    // A connect that lands after the bound is closed then; its failure was already reported as the timeout.
    connecting.then((c) => {
      if (expired) c.close();
    }, () => undefined); // a failure reaches the race above (or came after the bound, reported as the timeout)
    const c = await Promise.race([connecting, timeout]);
    conn = c;
    if (tls) await Promise.race([(c as Deno.TlsConn).handshake(), timeout]);
    return { url, ok: true, tls };
  } catch (e) {
    if (!_networkError(e)) throw e;
    return { url, ok: false, tls, error: (e as Error).message.split("\n")[0]!.slice(0, 300) };
  } finally {
    clearTimeout(timer);
    if (conn) _close(conn);
  }
}

function _close(c: Deno.Conn): void {
  try {
    c.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e; // a failed handshake closed it already
  }
}

/** What the network (or our bound) answers, as opposed to a bug: Deno's I/O errors, and a name that does not resolve. */
function _networkError(e: unknown): boolean {
  if (e instanceof _ProbeTimeout) return true;
  for (const k of _NET_ERRORS) if (e instanceof k) return true;
  // Deno reports a failed name lookup as a plain Error.
  return e instanceof Error && e.constructor === Error && /lookup address|resolve|dns/i.test(e.message);
}

const _NET_ERRORS = [
  Deno.errors.ConnectionRefused,
  Deno.errors.ConnectionReset,
  Deno.errors.ConnectionAborted,
  Deno.errors.NotConnected,
  Deno.errors.AddrNotAvailable,
  Deno.errors.TimedOut,
  Deno.errors.InvalidData,
  Deno.errors.UnexpectedEof,
  Deno.errors.BrokenPipe,
  Deno.errors.NetworkUnreachable,
  Deno.errors.PermissionDenied,
  Deno.errors.NotCapable,
];
