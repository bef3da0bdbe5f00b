/**
 * The ruleset: one `nft -f` transaction that replaces the `bridge bcd_instances` table (`add table`, `delete table`,
 * then its full content, so the kernel swaps it atomically) and loads the backstop tables `inet bcd_taps` and
 * `arp bcd_taps` the same way (000 §Instances).
 *
 * The rules are fixed; what varies per NIC lives in named sets, so the rule count never grows with the instances and
 * a lookup stays one hash or interval probe. In `bridge bcd_instances`:
 *
 * - `prerouting`: every frame from a `bc*` tap goes through `from_tap`, every frame from any port through `bind`.
 *   Prerouting runs before the bridge learns the frame's source MAC, so a spoofed frame never poisons its forwarding
 *   table, and before the bridge decides between forwarding and delivering to the host, so one check covers both.
 * - `forward`: tcp/22 into an `ssh_from_host_only` tap from any other bridge port is dropped
 *   (`oifname @ssh_taps tcp dport 22 drop`), ahead of everything; frames into a `PRIVATE`/`NONE` tap go through
 *   `to_restricted`.
 * - `output` (frames the host sends into a tap): tcp/22 into an `ssh_from_host_only` tap unless its source is one of
 *   the host's addresses on the instances' bridges (dropped outright for a family with no host address), then
 *   `to_restricted`.
 * - `from_tap`, for every `bc*` tap, guarded or not: 802.1Q/802.1ad tagged frames (the rules below could not see
 *   inside them), ARP that is not Ethernet/IPv4-shaped, DHCP server replies (UDP source port 67 or 547), router
 *   advertisements, ICMPv6 and ICMP redirects, and anything sent from or claiming (ARP, neighbour adverts) a host
 *   address are dropped. For a guarded tap (its NIC has a MAC and IPAM addresses): the frame's and ARP's source MAC
 *   must be the NIC's, only IPv4, IPv6 and ARP pass, the IPv4 and ARP source must be its own (or `0.0.0.0`), the
 *   IPv6 source its own, its EUI-64 link-local or `::`, a neighbour advert's target its own or its link-local. For a
 *   `PRIVATE` tap, destinations (IPv4, ARP target, IPv6 but neighbour discovery and MLD) must be in its IPAM subnets
 *   or the host's addresses (or the DHCP server groups `255.255.255.255`, `ff02::1:2`); for `NONE`, the host's only.
 * - `bind`: a guarded address (the link-local ones included) sent from or claimed by any port but its tap is dropped.
 * - `to_restricted`: into a `PRIVATE`/`NONE` tap only from the same reach set (its subnets and the host, or the host).
 *
 * Sets: `guarded_taps`, `restricted_taps`, `ssh_taps` (`ifname`); `mac_bind` (`ifname . ether_addr`); `v4_bind`,
 * `v6_bind` (`ifname . address`, the own addresses plus `0.0.0.0`/`::` and the link-local); `nd_bind` (the same IPv6
 * addresses as 128-bit integers, for a neighbour advert's target, which nft 1.0.6 names only as `@th,64,128`);
 * `v4_guarded`, `v6_guarded`, `nd_guarded`; `host_v4`, `host_v6`, `host_nd`; `v4_reach`, `v6_reach` (intervals).
 *
 * Text is built only from canonical spellings of parsed values and from `tapName`, after `checkNetPolicy`.
 *
 * @module
 */
import { type Cidr, contains, eui64LinkLocal, formatAddress, formatCidr, hexOf, networkOf, parseCidr } from "./addr.ts";
import type { NftTable, RuleCounts, TableCounts } from "./counts.ts";
import { checkHostAddresses, MAX_POLICY_NICS, type NetPolicy, type ParsedNic, parsedNics } from "./policy.ts";

/** A rendered ruleset: the `nft -f` text and the figures the integrity check expects after it loads. */
export interface Ruleset {
  readonly text: string;
  readonly expect: RuleCounts;
}

const _ND_TYPES =
  "{ nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, mld-listener-report, mld2-listener-report }";

/** The rules of each chain of `bridge bcd_instances`, with `%SSH4%`/`%SSH6%` filled per host addresses. */
function _bridgeChains(hostV4: boolean, hostV6: boolean): Record<string, { hook?: string; rules: string[] }> {
  return {
    prerouting: { hook: "prerouting", rules: ['iifname "bc*" jump from_tap', "jump bind"] },
    forward: {
      hook: "forward",
      rules: ["oifname @ssh_taps tcp dport 22 drop", "oifname @restricted_taps jump to_restricted"],
    },
    output: {
      hook: "output",
      rules: [
        hostV4
          ? "oifname @ssh_taps ether type ip tcp dport 22 ip saddr != @host_v4 drop"
          : "oifname @ssh_taps ether type ip tcp dport 22 drop",
        hostV6
          ? "oifname @ssh_taps ether type ip6 tcp dport 22 ip6 saddr != @host_v6 drop"
          : "oifname @ssh_taps ether type ip6 tcp dport 22 drop",
        "oifname @restricted_taps jump to_restricted",
      ],
    },
    from_tap: {
      rules: [
        "ether type { 0x8100, 0x88a8 } drop",
        "ether type arp arp hlen != 6 drop",
        "ether type arp arp plen != 4 drop",
        "udp sport { 67, 547 } drop",
        "icmpv6 type { nd-router-advert, nd-redirect } drop",
        "icmp type redirect drop",
        "ip saddr @host_v4 drop",
        "ip6 saddr @host_v6 drop",
        "arp saddr ip @host_v4 drop",
        "icmpv6 type nd-neighbor-advert @th,64,128 @host_nd drop",
        "iifname @guarded_taps iifname . ether saddr != @mac_bind drop",
        "iifname @guarded_taps ether type != { ip, ip6, arp } drop",
        "iifname @guarded_taps iifname . arp saddr ether != @mac_bind drop",
        "iifname @guarded_taps iifname . ip saddr != @v4_bind drop",
        "iifname @guarded_taps iifname . arp saddr ip != @v4_bind drop",
        "iifname @guarded_taps iifname . ip6 saddr != @v6_bind drop",
        "iifname @guarded_taps icmpv6 type nd-neighbor-advert iifname . @th,64,128 != @nd_bind drop",
        "iifname @restricted_taps iifname . ip daddr != @v4_reach drop",
        "iifname @restricted_taps iifname . arp daddr ip != @v4_reach drop",
        "iifname @restricted_taps meta l4proto != ipv6-icmp iifname . ip6 daddr != @v6_reach drop",
        `iifname @restricted_taps icmpv6 type != ${_ND_TYPES} iifname . ip6 daddr != @v6_reach drop`,
      ],
    },
    bind: {
      rules: [
        "ip saddr @v4_guarded iifname . ip saddr != @v4_bind drop",
        "arp saddr ip @v4_guarded iifname . arp saddr ip != @v4_bind drop",
        "ip6 saddr @v6_guarded iifname . ip6 saddr != @v6_bind drop",
        "icmpv6 type nd-neighbor-advert @th,64,128 @nd_guarded iifname . @th,64,128 != @nd_bind drop",
      ],
    },
    to_restricted: {
      rules: [
        "oifname . ip saddr != @v4_reach drop",
        "oifname . arp saddr ip != @v4_reach drop",
        "meta l4proto != ipv6-icmp oifname . ip6 saddr != @v6_reach drop",
        `icmpv6 type != ${_ND_TYPES} oifname . ip6 saddr != @v6_reach drop`,
      ],
    },
  };
}

const _SET_TYPES: Record<string, string> = {
  guarded_taps: "type ifname",
  restricted_taps: "type ifname",
  ssh_taps: "type ifname",
  mac_bind: "type ifname . ether_addr",
  v4_bind: "type ifname . ipv4_addr",
  v6_bind: "type ifname . ipv6_addr",
  nd_bind: "typeof iifname . @th,64,128",
  v4_guarded: "type ipv4_addr",
  v6_guarded: "type ipv6_addr",
  nd_guarded: "typeof @th,64,128",
  host_v4: "type ipv4_addr",
  host_v6: "type ipv6_addr",
  host_nd: "typeof @th,64,128",
  v4_reach: "type ifname . ipv4_addr; flags interval",
  v6_reach: "type ifname . ipv6_addr; flags interval",
};

const _BACKSTOP: Record<"inet bcd_taps" | "arp bcd_taps", Record<string, string[]>> = {
  "inet bcd_taps": {
    input: ['iifname "bc*" drop'],
    forward: ['iifname "bc*" drop', 'oifname "bc*" drop'],
    output: ['oifname "bc*" drop'],
  },
  "arp bcd_taps": { input: ['iifname "bc*" drop'], output: ['oifname "bc*" drop'] },
};

const _V4_DHCP = parseCidr("255.255.255.255")!;
const _V6_DHCP = parseCidr("ff02::1:2")!;
const _V4_ANY = "0.0.0.0";
const _V6_ANY = "::";

/** An IPv6 address as the 128-bit integer nft reads in a `@th,64,128` set. */
function _nd(b: Uint8Array): string {
  return `0x${hexOf(b)}`;
}

/** Entries as `[canonical text, network]`, each once, none contained in another (nft refuses overlapping intervals). */
function _outermost(cs: readonly Cidr[]): [string, Cidr][] {
  const uniq = new Map<string, Cidr>();
  for (const c of cs) {
    const net = c.prefix === c.bytes.length * 8 ? c : networkOf(c);
    uniq.set(formatCidr(net), net);
  }
  const all = [...uniq];
  return all.filter(([, c], i) => !all.some(([, o], j) => j !== i && contains(o, c) && (o.prefix < c.prefix || j < i)));
}

/** A NIC's reach set: `fixed` (the host and DHCP groups, already outermost) less what its own subnets cover. */
function _reach(fixed: readonly [string, Cidr][], own: readonly Cidr[]): [string, Cidr][] {
  if (own.length === 0) return [...fixed];
  const nets = _outermost(own);
  return [...nets, ...fixed.filter(([, c]) => !nets.some(([, o]) => contains(o, c)))];
}

/** `name { <type>; elements = { … } }`, one element a line; an empty set has no elements clause. */
function _set(name: string, elements: readonly string[]): string {
  const body = elements.length === 0 ? "" : `\n\t\telements = {\n\t\t\t${elements.join(",\n\t\t\t")}\n\t\t}`;
  return `\tset ${name} {\n\t\t${_SET_TYPES[name]}${body}\n\t}\n`;
}

function _chain(name: string, hook: string | undefined, rules: readonly string[]): string {
  const head = hook === undefined ? "" : `\t\ttype filter hook ${hook} priority filter; policy accept;\n`;
  return `\tchain ${name} {\n${head}${rules.map((r) => `\t\t${r}\n`).join("")}\t}\n`;
}

function _replace(table: string, body: string): string {
  return `add table ${table}\ndelete table ${table}\ntable ${table} {\n${body}}\n`;
}

/** What one NIC adds to the sets: `[set, element]` in order, and the addresses it guards. */
interface _NicElements {
  readonly elements: readonly (readonly [string, string])[];
  readonly guardedV4: readonly string[];
  readonly guardedV6: readonly (readonly [string, string])[];
}

/**
 * NICs already rendered, by their canonical fields and the host's reach set: the helper renders the whole policy on
 * every load, and most NICs come back unchanged (bounded: cleared when full).
 */
const _RENDERED = new Map<string, _NicElements>();
const _RENDERED_MAX = 2 * MAX_POLICY_NICS;

/** The elements `p` adds, rendered against the host's reach set `fixed` (whose canonical text is `fixedKey`). */
function _nicElements(p: ParsedNic, fixed: readonly [string, Cidr][], fixedKey: string): _NicElements {
  const n = p.nic;
  const key = `${p.tap}|${n.policy}|${n.sshFromHostOnly}|${n.mac ?? ""}|${n.addresses.join(" ")}|${fixedKey}`;
  let r = _RENDERED.get(key);
  if (r === undefined) {
    r = _renderNic(p, fixed);
    if (_RENDERED.size >= _RENDERED_MAX) _RENDERED.clear();
    _RENDERED.set(key, r);
  }
  return r;
}

function _renderNic({ nic: n, tap: name, mac, own }: ParsedNic, fixed: readonly [string, Cidr][]): _NicElements {
  const elements: [string, string][] = [];
  const add = (k: string, v: string) => elements.push([k, v]);
  const guardedV4: string[] = [], guardedV6: [string, string][] = [];
  const tap = `"${name}"`;
  if (n.sshFromHostOnly) add("ssh_taps", tap);
  if (mac === undefined || own.length === 0) return { elements, guardedV4, guardedV6 };
  add("guarded_taps", tap);
  add("mac_bind", `${tap} . ${n.mac}`);
  add("v4_bind", `${tap} . ${_V4_ANY}`);
  add("v6_bind", `${tap} . ${_V6_ANY}`);
  const ll = eui64LinkLocal(mac);
  const v6 = new Map<string, Uint8Array>([[formatAddress(6, ll), ll]]);
  for (const [i, c] of own.entries()) {
    // `addresses[i]` is `own[i]` in canonical text (checkNetPolicy made both); the bare address is before the `/`.
    const text = n.addresses[i]!;
    const slash = text.indexOf("/");
    const a = slash < 0 ? text : text.slice(0, slash);
    if (c.family === 6) {
      v6.set(a, c.bytes);
      continue;
    }
    add("v4_bind", `${tap} . ${a}`);
    guardedV4.push(a);
  }
  for (const [a, b] of v6) {
    const nd = _nd(b);
    add("v6_bind", `${tap} . ${a}`);
    add("nd_bind", `${tap} . ${nd}`);
    guardedV6.push([a, nd]);
  }
  if (n.policy === "egress") return { elements, guardedV4, guardedV6 };
  add("restricted_taps", tap);
  for (const [k, c] of _reach(fixed, n.policy === "private" ? own : [])) {
    add(c.family === 4 ? "v4_reach" : "v6_reach", `${tap} . ${k}`);
  }
  return { elements, guardedV4, guardedV6 };
}

/**
 * Renders `policy` for a host whose own addresses on the instances' bridges are `hostAddresses` (bare addresses, the
 * link-local ones included). Checks both first (`checkNetPolicy`; a policy it returned is not checked twice): a value it refuses throws
 * `NetPolicyError` and no text is built.
 *
 * @example
 * ```ts
 * const { text, expect } = renderRuleset({ nics: [] }, ["10.0.0.1"]);
 * // text: the three tables, every set empty; expect: their rule and element counts
 * ```
 */
export function renderRuleset(policy: NetPolicy, hostAddresses: readonly string[]): Ruleset {
  const nics = parsedNics(policy);
  const host = checkHostAddresses(hostAddresses).map((a) => parseCidr(a)!);
  const fixed = _outermost([...host, _V4_DHCP, _V6_DHCP]);
  const hostV4 = host.filter((c) => c.family === 4);
  const hostV6 = host.filter((c) => c.family === 6);
  const sets: Record<string, string[]> = Object.fromEntries(Object.keys(_SET_TYPES).map((k) => [k, []]));
  const add = (k: string, v: string) => sets[k]!.push(v);
  const guardedV4 = new Set<string>(), guardedV6 = new Map<string, string>();
  for (const c of hostV4) add("host_v4", formatAddress(4, c.bytes));
  for (const c of hostV6) {
    add("host_v6", formatAddress(6, c.bytes));
    add("host_nd", _nd(c.bytes));
  }
  const fixedKey = fixed.map(([k]) => k).join(" ");
  for (const p of nics) {
    const r = _nicElements(p, fixed, fixedKey);
    for (const [k, v] of r.elements) sets[k]!.push(v);
    for (const a of r.guardedV4) guardedV4.add(a);
    for (const [a, nd] of r.guardedV6) guardedV6.set(a, nd);
  }
  for (const a of guardedV4) add("v4_guarded", a);
  for (const [a, nd] of guardedV6) {
    add("v6_guarded", a);
    add("nd_guarded", nd);
  }
  const chains = _bridgeChains(hostV4.length > 0, hostV6.length > 0);
  let body = Object.entries(sets).map(([k, v]) => _set(k, v)).join("");
  body += Object.entries(chains).map(([k, c]) => _chain(k, c.hook, c.rules)).join("");
  let text = _replace("bridge bcd_instances", body);
  const expect: Record<NftTable, TableCounts> = {
    "bridge bcd_instances": {
      chains: Object.fromEntries(Object.entries(chains).map(([k, c]) => [k, c.rules.length])),
      sets: Object.fromEntries(Object.entries(sets).map(([k, v]) => [k, v.length])),
    },
    "inet bcd_taps": { chains: {}, sets: {} },
    "arp bcd_taps": { chains: {}, sets: {} },
  };
  for (const [table, cs] of Object.entries(_BACKSTOP) as [keyof typeof _BACKSTOP, Record<string, string[]>][]) {
    text += _replace(table, Object.entries(cs).map(([k, rules]) => _chain(k, k, rules)).join(""));
    expect[table] = { chains: Object.fromEntries(Object.entries(cs).map(([k, r]) => [k, r.length])), sets: {} };
  }
  return { text, expect };
}
