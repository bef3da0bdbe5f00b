/**
 * The guards of `site.httpProxy` (000 §Signed commands and attested results: the proxy "never reaches a BMC"), each a
 * refusal with `forbidden-target` naming the guard and the value, checked in this order before a byte is sent:
 *
 * 1. any `/redfish` path (after percent-decoding, case-folding and collapsing repeated slashes);
 * 2. a BMC host the site agent drives (`data_dir/bmc-hosts.json`), by name;
 * 3. (the URL's host is resolved: an IP literal is itself, a name its A and AAAA records; none fails
 *    `proxy-unresolved`)
 * 4. a BMC host by resolved address: any address of the URL is a recorded BMC's address (its literal, or what its
 *    recorded name resolves to);
 * 5. any address in the agent's `[site] bmc_networks`;
 * 6. the URL's host must belong to the command's `target_node_id` once the site spec lists proxy targets
 *    (`SiteSection.proxy_targets`): an IP literal must be one of that node's listed addresses, a name must be one of
 *    its listed names or resolve only to its listed addresses;
 * 7. anything but a `GET` needs a batch leaf bound to its payload under the quorum: the command carries a `batch_id`
 *    and the trust bundle holds approver keys, so acceptance checked the leaf whose subject {@link proxySubject} binds
 *    the payload's SHA-256.
 *
 * The request then goes to the address that was checked (never resolved again: no DNS rebinding between the check
 * and the connection). IPv4-mapped IPv6 addresses are read as IPv4. Interpretation: the seed does not say whether an
 * empty `proxy_targets` list admits any host; we follow its "once the site spec lists proxy targets" and check the
 * other guards only, as it says.
 *
 * @module
 */
import { sha256HexSync } from "../../core/util/sha256.ts";
import { CommandFailed } from "../../core/commands/rejection.ts";
import { type Cidr, contains, formatAddress, parseCidr } from "../../core/netpolicy/addr.ts";
import type { bcd } from "../../proto/mod.ts";
import { normalizeHost } from "../redfish/bmc_hosts.ts";

/** The reason of every guard. */
export const FORBIDDEN_TARGET = "forbidden-target";

/** What the guards read. */
export interface ProxyGuardPorts {
  /** The recorded BMC hosts. */
  readonly bmcHosts: { list(): Promise<readonly { readonly host: string }[]> };
  /** A name's addresses (A and AAAA); empty when it has none. */
  resolve(name: string): Promise<string[]>;
  /** `[site] bmc_networks`, parsed. */
  readonly bmcNetworks: readonly Cidr[];
  /** The site spec's proxy targets, or none. */
  proxyTargets(): readonly bcd.v1.ProxyTarget.$Properties[];
  /** Whether the trust bundle holds approver keys. */
  quorumEnforced(): boolean;
}

/** What a checked request may connect to. */
export interface CheckedTarget {
  readonly url: URL;
  /** The canonical address to connect to. */
  readonly address: string;
  readonly port: number;
}

/** One request's facts for the guards. */
export interface ProxyRequestFacts {
  readonly targetNodeId: string;
  readonly method: string;
  readonly url: URL;
  /** The command's batch id (`""` unbatched). */
  readonly batchId: string;
}

/** Parses `[site] bmc_networks`; a bad entry is a RangeError naming it (the agent does not start). */
export function parseBmcNetworks(list: readonly string[]): Cidr[] {
  return list.map((s) => {
    const c = parseCidr(s.trim());
    if (!c) throw new RangeError(`[site] bmc_networks: ${JSON.stringify(s)} is not an address or CIDR`);
    return c;
  });
}

/**
 * The batch leaf subject of a proxy request: the target node and the SHA-256 of the payload bytes (the packed
 * `SiteHttpProxyPayload`) it is bound to, `<target node>#payload-sha256:<hex>`. The control plane builds the leaf the
 * same way; a payload changed by one byte is another leaf, which no approval covers.
 */
export function proxySubject(targetNodeId: string, payload: Uint8Array): string {
  return `${targetNodeId}#payload-sha256:${sha256HexSync(payload)}`;
}

/** Runs the guards in order; throws `CommandFailed` (`forbidden-target`, `proxy-unresolved`). */
export async function checkProxyTarget(f: ProxyRequestFacts, g: ProxyGuardPorts): Promise<CheckedTarget> {
  const forbid = (why: string) => new CommandFailed(FORBIDDEN_TARGET, `site.httpProxy to ${f.url.href}: ${why}`);
  // 1. /redfish
  if (isRedfishPath(f.url.pathname)) throw forbid(`the path ${f.url.pathname} is a Redfish path`);
  // 2. a BMC by name
  const host = normalizeHost(f.url.hostname);
  const bmcs = (await g.bmcHosts.list()).map((b) => normalizeHost(b.host));
  if (bmcs.includes(host)) throw forbid(`${host} is a BMC this site agent drives`);
  // 3. resolve
  const literal = canonicalAddress(host);
  const addresses = literal ? [literal] : _unique((await g.resolve(host)).map(canonicalAddress).filter(_isString));
  if (addresses.length === 0) throw new CommandFailed("proxy-unresolved", `${host} resolves to no address`);
  // 4. a BMC by address
  for (const b of bmcs) {
    const bAddrs = canonicalAddress(b) ? [canonicalAddress(b)!] : (await g.resolve(b)).map(canonicalAddress);
    const hit = addresses.find((a) => bAddrs.includes(a));
    if (hit) throw forbid(`${host} resolves to ${hit}, the address of the BMC ${b}`);
  }
  // 5. bmc_networks
  for (const a of addresses) {
    const net = g.bmcNetworks.find((n) => contains(n, parseCidr(a)!));
    if (net) throw forbid(`${a} is in [site] bmc_networks ${formatAddress(net.family, net.bytes)}/${net.prefix}`);
  }
  // 6. proxy_targets
  const targets = g.proxyTargets();
  if (targets.length > 0) {
    const mine = targets.filter((t) => t.node_id === f.targetNodeId);
    if (mine.length === 0) throw forbid(`node ${f.targetNodeId} is not among the site's proxy targets`);
    const listed = new Set(mine.flatMap((t) => (t.addresses ?? []).map(canonicalAddress).filter(_isString)));
    const names = new Set(mine.flatMap((t) => (t.names ?? []).map(normalizeHost)));
    if (literal) {
      if (!listed.has(literal)) throw forbid(`${literal} is not an address of node ${f.targetNodeId}`);
    } else if (!names.has(host)) {
      const stray = addresses.find((a) => !listed.has(a));
      if (stray) throw forbid(`${host} resolves to ${stray}, which is not an address of node ${f.targetNodeId}`);
    }
  }
  // 7. anything but GET needs its batch leaf under the quorum
  if (f.method !== "GET" && (f.batchId === "" || !g.quorumEnforced())) {
    throw forbid(
      `a ${f.method} needs a batch leaf bound to its payload under the quorum ` +
        (f.batchId === "" ? "(the command has no batch)" : "(no approver keys: the quorum is off)"),
    );
  }
  const port = Number(f.url.port || (f.url.protocol === "https:" ? 443 : 80));
  return { url: f.url, address: addresses[0]!, port };
}

/** Whether a URL path is a Redfish path: `/redfish` or under it, however spelled. */
export function isRedfishPath(pathname: string): boolean {
  let p: string;
  try {
    p = decodeURIComponent(pathname);
  } catch (e) {
    if (e instanceof URIError) return true; // undecodable: refuse rather than guess
    throw e;
  }
  p = p.toLowerCase().replace(/[\\/]+/g, "/");
  return p === "/redfish" || p.startsWith("/redfish/") || p.startsWith("/redfish;") || p.startsWith("/redfish.");
}

/** An IP literal in its canonical spelling (IPv4-mapped IPv6 as IPv4), or `undefined` for a name. */
export function canonicalAddress(s: string): string | undefined {
  const c = parseCidr(s.replace(/^\[|\]$/g, ""));
  if (!c || c.prefix !== (c.family === 4 ? 32 : 128)) return undefined;
  const b = c.bytes;
  if (c.family === 6 && b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) {
    return formatAddress(4, b.slice(12));
  }
  return formatAddress(c.family, b);
}

function _isString(s: string | undefined): s is string {
  return s !== undefined;
}

function _unique(a: string[]): string[] {
  return [...new Set(a)];
}
