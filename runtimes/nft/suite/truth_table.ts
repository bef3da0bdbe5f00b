/**
 * Test support: the truth table of 000 §Instances as rows of real frames. Each row sends a probe frame from an
 * instance (or the host, or a plain bridge port) and says whether it must be seen where it is sniffed; a canary, an
 * allowed frame from the same sender that reaches the same place, follows it, and the packet script
 * (`fixtures/nft/packets.py`) reads until the canary arrives, so "not seen" is an event, never a timeout.
 *
 * @module
 */
import { arp, ETH, eth, hex, icmp6, ip, neighbourAdvert, ping4, routerAdvert, tcpSyn, udp } from "./frames.ts";
import type { Inst, Topology } from "./topology.ts";

/** One frame to send. */
export interface Send {
  readonly ns: string;
  readonly ifname: string;
  readonly frame: Uint8Array;
}

/** One row: the probe, whether it must be seen, and the canary that must be. */
export interface Row {
  readonly name: string;
  readonly expect: boolean;
  readonly probe: Send;
  readonly canary: Send;
  readonly sniff: { readonly ns: string; readonly ifname: string | null };
  readonly probeMatch?: readonly [number, string][];
  readonly canaryMatch?: readonly [number, string][];
}

/** What the script found for a row. */
export interface RowResult {
  readonly probeSeen: boolean;
  readonly canarySeen: boolean;
}

const BC = "ff:ff:ff:ff:ff:ff";
const ZERO = "00:00:00:00:00:00";
const ALL_NODES = "33:33:00:00:00:01";
const OUTSIDE = "198.51.100.1";
const _script = new URL("../../../fixtures/nft/packets.py", import.meta.url).pathname;

/** Runs `rows` through the packet script in one process, the sender pinned to CPU 0. */
export async function runRows(rows: readonly Row[]): Promise<RowResult[]> {
  const job = {
    cpu: 0,
    rows: rows.map((r) => ({
      probe: { ...r.probe, frame: hex(r.probe.frame) },
      canary: { ...r.canary, frame: hex(r.canary.frame) },
      sniff: r.sniff,
      probeMatch: r.probeMatch ?? [[0, hex(r.probe.frame)]],
      canaryMatch: r.canaryMatch ?? [[0, hex(r.canary.frame)]],
    })),
  };
  const child = new Deno.Command("python3", { args: [_script], stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(JSON.stringify(job)));
  await w.close();
  const out = await child.output();
  const dec = new TextDecoder();
  if (out.code !== 0) throw new Error(`packets.py failed (exit ${out.code}): ${dec.decode(out.stderr)}`);
  return (JSON.parse(dec.decode(out.stdout)) as { results: RowResult[] }).results;
}

/** The rows, each built with a fresh nonce so no two frames of a run are alike. */
export function truthTable(t: Topology, hostTapMac: string, plainMac: string): Row[] {
  let n = 1;
  const nonce = () => Uint8Array.of(0xbc, 0xd0, (n >> 8) & 255, n++ & 255);
  const at = (x: Inst) => ({ ns: x.ns, ifname: "eth0" });
  const H = { ns: t.host, ifname: "br0" };
  const from = (x: Inst, frame: Uint8Array): Send => ({ ...at(x), frame });
  const fromHost = (frame: Uint8Array): Send => ({ ...H, frame });
  // A broadcast ARP request from the sender's own address for a host address: allowed from every guarded tap, seen by
  // the host and flooded to every port whose reach includes the sender.
  const arpFrom = (x: Inst, hostIp: string) => from(x, eth(BC, x.mac, ETH.arp, arp(1, x.mac, x.v4, ZERO, hostIp, n++)));
  const v4 = (x: Inst, dstMac: string, src: string, dst: string, srcMac = x.mac) =>
    from(x, eth(dstMac, srcMac, ETH.ip, udp(src, dst, 5000 + n, 6000, nonce(), n++)));
  const v6 = (x: Inst, dstMac: string, src: string, dst: string) =>
    from(x, eth(dstMac, x.mac, ETH.ip6, udp(src, dst, 5000 + n, 6000, nonce(), n++)));
  const syn = (x: Inst | "host", dstMac: string, src: string, dst: string, port: number): Send => {
    const srcMac = x === "host" ? t.brMac : x.mac;
    const f = eth(dstMac, srcMac, src.includes(":") ? ETH.ip6 : ETH.ip, tcpSyn(src, dst, 40000 + n, port, n++));
    return x === "host" ? fromHost(f) : from(x, f);
  };
  const na = (x: Inst, src: string, target: string) =>
    from(x, eth(ALL_NODES, x.mac, ETH.ip6, neighbourAdvert(src, "ff02::1", target, x.mac, n++)));
  const { a, b, c, d, e, u } = t;
  const sH = { ns: t.host, ifname: "br0" };
  const s = (x: Inst) => at(x);
  const row = (name: string, expect: boolean, probe: Send, canary: Send, sniff: Row["sniff"]): Row => ({
    name,
    expect,
    probe,
    canary,
    sniff,
  });
  const hostCanaryTo = (x: Inst) =>
    fromHost(
      eth(
        x.mac,
        t.brMac,
        ETH.ip,
        udp(x.v4.startsWith("10.1.") ? "10.1.0.1" : "10.2.0.1", x.v4, 7000, 7001, nonce(), n++),
      ),
    );
  const echoReply = (
    src: string,
    ident: number,
  ): [number, string][] => [[12, "0800"], [26, hex(ip(src))], [34, "00"], [38, ident.toString(16).padStart(4, "0")]];
  const pingVia = (ifname: string, dstMac: string, srcMac: string, src: string, dst: string, ident: number): Send => ({
    ns: t.o,
    ifname,
    frame: eth(dstMac, srcMac, ETH.ip, ping4(src, dst, ident)),
  });
  const viaPlain = (ident: number) => pingVia("ethg", plainMac, "52:54:00:00:00:10", "10.7.0.2", "10.7.0.1", ident);
  const viaOff = (ident: number) => pingVia("ethf", hostTapMac, "52:54:00:00:00:0f", "10.8.0.2", "10.8.0.1", ident);
  return [
    // Anti-spoofing: own traffic passes; a spoofed source (IPv4, IPv6, MAC, link-local) is dropped.
    row("PRIVATE: own IPv4 to the host passes", true, v4(a, t.brMac, a.v4, "10.1.0.1"), arpFrom(a, "10.1.0.1"), sH),
    row("spoofed IPv4 source is dropped", false, v4(a, t.brMac, "10.1.0.50", "10.1.0.1"), arpFrom(a, "10.1.0.1"), sH),
    row(
      "spoofed source MAC is dropped",
      false,
      v4(a, t.brMac, a.v4, "10.1.0.1", "52:54:00:00:00:99"),
      arpFrom(a, "10.1.0.1"),
      sH,
    ),
    row("own IPv6 to the host passes", true, v6(a, t.brMac, a.v6!, "fd00:1::1"), arpFrom(a, "10.1.0.1"), sH),
    row("spoofed IPv6 source is dropped", false, v6(a, t.brMac, "fd00:1::50", "fd00:1::1"), arpFrom(a, "10.1.0.1"), sH),
    row("own EUI-64 link-local to the host passes", true, v6(a, t.brMac, a.ll, "fe80::1"), arpFrom(a, "10.1.0.1"), sH),
    row(
      "another link-local source is dropped",
      false,
      v6(a, t.brMac, "fe80::1234", "fe80::1"),
      arpFrom(a, "10.1.0.1"),
      sH,
    ),
    // PRIVATE: its subnet and the host, nothing else.
    row("PRIVATE reaches its subnet", true, v4(a, b.mac, a.v4, b.v4), arpFrom(a, "10.1.0.1"), s(b)),
    row("PRIVATE does not reach another subnet", false, v4(a, d.mac, a.v4, d.v4), arpFrom(a, "10.1.0.1"), s(d)),
    row("PRIVATE does not reach past the host", false, v4(a, t.brMac, a.v4, OUTSIDE), arpFrom(a, "10.1.0.1"), sH),
    row(
      "PRIVATE takes nothing from another subnet",
      false,
      v4(d, a.mac, d.v4, a.v4),
      na(d, d.ll, d.v6!),
      s(a),
    ),
    row(
      "PRIVATE takes nothing the host routes in from outside",
      false,
      fromHost(eth(a.mac, t.brMac, ETH.ip, udp(OUTSIDE, a.v4, 7000, 7002, nonce(), n++))),
      hostCanaryTo(a),
      s(a),
    ),
    // ARP and neighbour adverts: no claim on the host's or a neighbour's address.
    row(
      "gratuitous ARP claiming the host's address is dropped",
      false,
      from(a, eth(BC, a.mac, ETH.arp, arp(2, a.mac, "10.1.0.1", BC, "10.1.0.1", n++))),
      arpFrom(a, "10.1.0.1"),
      s(b),
    ),
    row(
      "gratuitous ARP claiming a neighbour's address is dropped",
      false,
      from(a, eth(BC, a.mac, ETH.arp, arp(2, a.mac, b.v4, BC, b.v4, n++))),
      arpFrom(a, "10.1.0.1"),
      sH,
    ),
    row(
      "ARP from the own address passes",
      true,
      from(a, eth(BC, a.mac, ETH.arp, arp(1, a.mac, a.v4, ZERO, "10.1.0.1", n++))),
      arpFrom(a, "10.1.0.1"),
      sH,
    ),
    row(
      "neighbour advert claiming the host's address is dropped",
      false,
      na(a, a.v6!, "fd00:1::1"),
      arpFrom(a, "10.1.0.1"),
      s(b),
    ),
    row("neighbour advert for the own address passes", true, na(a, a.v6!, a.v6!), arpFrom(a, "10.1.0.1"), s(b)),
    row(
      "neighbour advert claiming a neighbour's address is dropped",
      false,
      na(a, a.v6!, b.v6!),
      arpFrom(a, "10.1.0.1"),
      sH,
    ),
    // EGRESS: nothing added, still anti-spoofed; DHCP server replies, RAs and redirects dropped on every tap.
    row("EGRESS reaches past the host", true, v4(d, t.brMac, d.v4, OUTSIDE), arpFrom(d, "10.2.0.1"), sH),
    row("EGRESS is still anti-spoofed", false, v4(d, t.brMac, "10.2.0.99", "10.2.0.1"), arpFrom(d, "10.2.0.1"), sH),
    row(
      "a DHCP offer from an instance is dropped",
      false,
      from(d, eth(BC, d.mac, ETH.ip, udp(d.v4, "255.255.255.255", 67, 68, nonce(), n++))),
      arpFrom(d, "10.2.0.1"),
      s(e),
    ),
    row(
      "a DHCPv6 reply from an instance is dropped",
      false,
      from(d, eth(ALL_NODES, d.mac, ETH.ip6, udp(d.ll, "ff02::1", 547, 546, nonce(), n++))),
      arpFrom(d, "10.2.0.1"),
      s(e),
    ),
    row(
      "a router advert from an instance is dropped",
      false,
      from(d, eth(ALL_NODES, d.mac, ETH.ip6, routerAdvert(d.ll, n++))),
      arpFrom(d, "10.2.0.1"),
      s(e),
    ),
    row(
      "an ICMPv6 redirect from an instance is dropped",
      false,
      from(d, eth(e.mac, d.mac, ETH.ip6, icmp6(d.ll, "fe80::5054:ff:fe00:e", 137, new Uint8Array(36), n++))),
      arpFrom(d, "10.2.0.1"),
      s(e),
    ),
    row("the instance's own neighbour advert passes", true, na(d, d.ll, d.v6!), arpFrom(d, "10.2.0.1"), s(e)),
    // An unguarded tap and a plain bridge port: guarded addresses are bound to their taps; the host's are the host's.
    row("an unguarded tap sends from its own address", true, v4(e, d.mac, e.v4, d.v4), arpFrom(e, "10.2.0.1"), s(d)),
    row(
      "an unguarded tap may not send from a guarded address",
      false,
      v4(e, t.brMac, a.v4, "10.1.0.1"),
      arpFrom(e, "10.2.0.1"),
      sH,
    ),
    row(
      "an unguarded tap may not claim a guarded address by ARP",
      false,
      from(e, eth(BC, e.mac, ETH.arp, arp(2, e.mac, a.v4, BC, a.v4, n++))),
      arpFrom(e, "10.2.0.1"),
      s(d),
    ),
    row(
      "an unguarded tap may not claim a guarded address by neighbour advert",
      false,
      na(e, "fe80::5054:ff:fe00:e", a.v6!),
      arpFrom(e, "10.2.0.1"),
      s(d),
    ),
    row(
      "an unguarded tap may not send from the host's address",
      false,
      v4(e, d.mac, "10.2.0.1", d.v4),
      arpFrom(e, "10.2.0.1"),
      s(d),
    ),
    row(
      "a plain bridge port may not send from a guarded address",
      false,
      v4(u, t.brMac, b.v4, "10.1.0.1"),
      arpFrom(u, "10.1.0.1"),
      sH,
    ),
    // NONE: the host only.
    row("NONE reaches the host", true, v4(c, t.brMac, c.v4, "10.2.0.1"), arpFrom(c, "10.2.0.1"), sH),
    row("NONE does not reach its own subnet", false, v4(c, d.mac, c.v4, d.v4), arpFrom(c, "10.2.0.1"), s(d)),
    row("NONE does not reach past the host", false, v4(c, t.brMac, c.v4, OUTSIDE), arpFrom(c, "10.2.0.1"), sH),
    row(
      "NONE may not ARP for a neighbour",
      false,
      from(c, eth(BC, c.mac, ETH.arp, arp(1, c.mac, c.v4, ZERO, d.v4, n++))),
      arpFrom(c, "10.2.0.1"),
      s(d),
    ),
    // ssh_from_host_only: tcp/22 from a host address works; from anywhere else it does not.
    row("tcp/22 from a host address works", true, syn("host", d.mac, "10.2.0.1", d.v4, 22), hostCanaryTo(d), s(d)),
    row(
      "tcp/22 from a non-host source on the host fails",
      false,
      syn("host", d.mac, "198.51.100.7", d.v4, 22),
      hostCanaryTo(d),
      s(d),
    ),
    row(
      "tcp/80 from that source still works",
      true,
      syn("host", d.mac, "198.51.100.7", d.v4, 80),
      hostCanaryTo(d),
      s(d),
    ),
    row(
      "IPv6 tcp/22 from a host address works",
      true,
      syn("host", d.mac, "fd00:1::1", d.v6!, 22),
      hostCanaryTo(d),
      s(d),
    ),
    row(
      "IPv6 tcp/22 from a non-host source fails",
      false,
      syn("host", d.mac, "2001:db8::7", d.v6!, 22),
      hostCanaryTo(d),
      s(d),
    ),
    row("tcp/22 from a neighbour fails", false, syn(e, d.mac, e.v4, d.v4, 22), arpFrom(e, "10.2.0.1"), s(d)),
    row("tcp/80 from that neighbour works", true, syn(e, d.mac, e.v4, d.v4, 80), arpFrom(e, "10.2.0.1"), s(d)),
    row("tcp/22 from another bridge port fails", false, syn(u, d.mac, u.v4, d.v4, 22), arpFrom(u, "10.1.0.1"), s(d)),
    row(
      "tcp/22 from a PRIVATE neighbour in the same subnet fails",
      false,
      syn(b, a.mac, b.v4, a.v4, 22),
      arpFrom(b, "10.1.0.1"),
      s(a),
    ),
    row("tcp/80 from that PRIVATE neighbour works", true, syn(b, a.mac, b.v4, a.v4, 80), arpFrom(b, "10.1.0.1"), s(a)),
    // The backstop: an instance tap off its bridge reaches the host's inet and arp hooks, and is dropped there.
    {
      name: "backstop: a bc* tap off its bridge gets no echo reply from the host",
      expect: false,
      probe: viaOff(0x1111),
      canary: viaPlain(0x2222),
      sniff: { ns: t.o, ifname: null },
      probeMatch: echoReply("10.8.0.1", 0x1111),
      canaryMatch: echoReply("10.7.0.1", 0x2222),
    },
    {
      name: "backstop: a plain veth off the bridge gets its echo reply",
      expect: true,
      probe: viaPlain(0x3333),
      canary: viaPlain(0x4444),
      sniff: { ns: t.o, ifname: null },
      probeMatch: echoReply("10.7.0.1", 0x3333),
      canaryMatch: echoReply("10.7.0.1", 0x4444),
    },
    {
      name: "backstop: a bc* tap off its bridge gets no ARP reply from the host",
      expect: false,
      probe: {
        ns: t.o,
        ifname: "ethf",
        frame: eth(BC, "52:54:00:00:00:0f", ETH.arp, arp(1, "52:54:00:00:00:0f", "10.8.0.2", ZERO, "10.8.0.1", n++)),
      },
      canary: viaPlain(0x5555),
      sniff: { ns: t.o, ifname: null },
      probeMatch: [[12, "0806"], [20, "0002"], [28, hex(ip("10.8.0.1"))]],
      canaryMatch: echoReply("10.7.0.1", 0x5555),
    },
  ];
}
