/**
 * Test support: a host with one bridge and instances behind it, all in network namespaces the test makes. The host
 * namespace holds bridge `br0` (10.1.0.1/24, 10.2.0.1/24, fd00:1::1/64, fe80::1) and a veth end per instance named
 * as bcd names taps (`tapName(instance, 0)`); each instance is a namespace whose `eth0` is the other end, with the
 * NIC's MAC. `up0` is a bridge port that is not an instance tap (an uplink); namespace `o` sits behind an instance
 * tap that is off the bridge (the backstop's case) and behind `xg0`, a plain veth for comparison.
 *
 * @module
 */
import { tapName } from "../../../core/converge/instances/tap_name.ts";
import {
  eui64LinkLocal,
  formatAddress,
  type NetPolicy,
  type NicPolicy,
  parseMac,
} from "../../../core/netpolicy/mod.ts";
import { Netns } from "../netns_harness.ts";

/** One instance of the topology. */
export interface Inst {
  readonly id: string;
  readonly ns: string;
  readonly tap: string;
  readonly mac: string;
  readonly v4: string;
  readonly v6?: string;
  /** Its EUI-64 link-local address. */
  readonly ll: string;
}

/** The built topology. */
export interface Topology {
  readonly nets: Netns;
  readonly host: string;
  readonly brMac: string;
  readonly a: Inst;
  readonly b: Inst;
  readonly c: Inst;
  readonly d: Inst;
  readonly e: Inst;
  readonly u: Inst;
  /** The namespace behind the off-bridge tap (`ethf`) and the plain veth (`ethg`). */
  readonly o: string;
  readonly offTap: string;
  readonly policy: NetPolicy;
}

const _NICS: Record<string, Omit<NicPolicy, "instance" | "index" | "bridge">> = {
  a: {
    policy: "private",
    sshFromHostOnly: true,
    mac: "52:54:00:00:00:0a",
    addresses: ["10.1.0.2/24", "fd00:1::2/64"],
  },
  b: {
    policy: "private",
    sshFromHostOnly: false,
    mac: "52:54:00:00:00:0b",
    addresses: ["10.1.0.3/24", "fd00:1::3/64"],
  },
  c: { policy: "none", sshFromHostOnly: false, mac: "52:54:00:00:00:0c", addresses: ["10.2.0.2/24"] },
  d: { policy: "egress", sshFromHostOnly: true, mac: "52:54:00:00:00:0d", addresses: ["10.2.0.3/24", "fd00:2::3/64"] },
  // Unguarded: the spec gives no MAC and no addresses (its eth0 has some all the same).
  e: { policy: "egress", sshFromHostOnly: false, addresses: [] },
  f: { policy: "egress", sshFromHostOnly: false, addresses: [] },
};

/** Builds the topology and loads nothing; the caller loads the policy. */
export async function buildTopology(): Promise<Topology> {
  const nets = new Netns("pk");
  try {
    const host = await nets.add("h");
    await nets.ip(host, "link", "add", "br0", "type", "bridge");
    // An explicit MAC: a bridge's own would follow its ports as they are added.
    await nets.ip(host, "link", "set", "br0", "address", "02:00:00:00:01:01", "addrgenmode", "none");
    for (const a of ["10.1.0.1/24", "10.2.0.1/24"]) await nets.ip(host, "addr", "add", a, "dev", "br0");
    for (const a of ["fd00:1::1/64", "fe80::1/64"]) await nets.ip(host, "addr", "add", a, "dev", "br0", "nodad");
    await nets.ip(host, "link", "set", "br0", "up");
    const brMac = (JSON.parse(await nets.ip(host, "-j", "link", "show", "br0")) as { address: string }[])[0]!.address;
    const inst = async (k: string, mac: string, v4: string, v6?: string, tap = tapName(`inst-${k}`, 0)) => {
      const ns = await nets.add(k);
      await nets.exec(ns, "sysctl", ["-q", "-w", "net.ipv6.conf.all.disable_ipv6=1"]);
      await nets.ip(host, "link", "add", tap, "type", "veth", "peer", "name", "eth0", "netns", ns);
      await nets.ip(host, "link", "set", tap, "master", "br0", "up");
      await nets.ip(ns, "link", "set", "eth0", "address", mac, "up");
      const ll = formatAddress(6, eui64LinkLocal(parseMac(mac)!));
      return { id: `inst-${k}`, ns, tap, mac, v4, ...(v6 ? { v6 } : {}), ll };
    };
    const a = await inst("a", "52:54:00:00:00:0a", "10.1.0.2", "fd00:1::2");
    const b = await inst("b", "52:54:00:00:00:0b", "10.1.0.3", "fd00:1::3");
    const c = await inst("c", "52:54:00:00:00:0c", "10.2.0.2");
    const d = await inst("d", "52:54:00:00:00:0d", "10.2.0.3", "fd00:2::3");
    const e = await inst("e", "52:54:00:00:00:0e", "10.9.0.2");
    const u = await inst("u", "52:54:00:00:00:75", "10.1.0.99", undefined, "up0");
    // The backstop's case: an instance tap that is not on its bridge, beside a plain veth.
    const o = await nets.add("o");
    const offTap = tapName("inst-f", 0);
    for (
      const [hostEnd, peer, net, mac] of [[offTap, "ethf", "10.8.0", "52:54:00:00:00:0f"], [
        "xg0",
        "ethg",
        "10.7.0",
        "52:54:00:00:00:10",
      ]]
    ) {
      await nets.ip(host, "link", "add", hostEnd!, "type", "veth", "peer", "name", peer!, "netns", o);
      await nets.ip(host, "addr", "add", `${net}.1/24`, "dev", hostEnd!);
      await nets.ip(host, "link", "set", hostEnd!, "up");
      await nets.ip(o, "link", "set", peer!, "address", mac!, "up");
      await nets.ip(host, "neigh", "replace", `${net}.2`, "lladdr", mac!, "dev", hostEnd!, "nud", "permanent");
    }
    const policy: NetPolicy = {
      nics: Object.entries(_NICS).map(([k, n]) => ({ instance: `inst-${k}`, index: 0, bridge: "br0", ...n })),
    };
    return { nets, host, brMac, a, b, c, d, e, u, o, offTap, policy };
  } catch (err) {
    await nets.close();
    throw err;
  }
}

/** The MAC of `ifname` in namespace `ns`. */
export async function macOf(nets: Netns, ns: string, ifname: string): Promise<string> {
  return (JSON.parse(await nets.ip(ns, "-j", "link", "show", ifname)) as { address: string }[])[0]!.address;
}
