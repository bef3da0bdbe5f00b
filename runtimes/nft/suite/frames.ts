/**
 * Test support: Ethernet frames built byte by byte for the truth table (IPv4/UDP/TCP/ICMP, IPv6/UDP/TCP/ICMPv6 with
 * neighbour and router adverts, ARP), with correct checksums, so what the kernel sees is what a guest could send.
 *
 * @module
 */
import { parseCidr, parseMac } from "../../../core/netpolicy/mod.ts";

function _cat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function _u16(n: number): Uint8Array {
  return Uint8Array.of((n >> 8) & 255, n & 255);
}

function _u32(n: number): Uint8Array {
  return Uint8Array.of((n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255);
}

/** An address's bytes (4 or 16). */
export function ip(s: string): Uint8Array {
  const c = parseCidr(s);
  if (c === undefined) throw new RangeError(`not an address: ${s}`);
  return c.bytes;
}

/** A MAC's bytes. */
export function mac(s: string): Uint8Array {
  const b = parseMac(s);
  if (b === undefined) throw new RangeError(`not a MAC: ${s}`);
  return b;
}

function _sum(b: Uint8Array, init = 0): number {
  let s = init;
  for (let i = 0; i < b.length; i += 2) s += (b[i]! << 8) | (b[i + 1] ?? 0);
  while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
  return s;
}

function _csum(b: Uint8Array, init = 0): number {
  return ~_sum(b, init) & 0xffff;
}

/**
 * Ethernet II, unpadded: veth carries short frames as they are, and the bridge's netfilter hooks trim an IP frame to
 * its IP length anyway, so a padded frame would not be seen byte for byte.
 */
export function eth(dst: string, src: string, type: number, payload: Uint8Array): Uint8Array {
  return _cat(mac(dst), mac(src), _u16(type), payload);
}

/** An IPv4 packet (no options) with its header checksum. */
export function ipv4(src: string, dst: string, proto: number, payload: Uint8Array, id = 1): Uint8Array {
  const h = _cat(
    Uint8Array.of(0x45, 0),
    _u16(20 + payload.length),
    _u16(id),
    Uint8Array.of(0x40, 0, 64, proto),
    _u16(0),
    ip(src),
    ip(dst),
  );
  h.set(_u16(_csum(h)), 10);
  return _cat(h, payload);
}

/** An IPv6 packet (no extension headers). */
export function ipv6(src: string, dst: string, next: number, payload: Uint8Array, hopLimit = 64, flow = 0): Uint8Array {
  return _cat(
    _u32((6 << 28) | (flow & 0xfffff)),
    _u16(payload.length),
    Uint8Array.of(next, hopLimit),
    ip(src),
    ip(dst),
    payload,
  );
}

function _pseudo(src: string, dst: string, proto: number, len: number): number {
  const s = ip(src), d = ip(dst);
  const p = s.length === 4
    ? _cat(s, d, Uint8Array.of(0, proto), _u16(len))
    : _cat(s, d, _u32(len), Uint8Array.of(0, 0, 0, proto));
  return _sum(p);
}

/** A transport segment with its checksum over the pseudo-header (UDP 17, TCP 6, ICMPv6 58; ICMP 1 has none). */
function _l4(src: string, dst: string, proto: number, seg: Uint8Array, at: number): Uint8Array {
  const init = proto === 1 ? 0 : _pseudo(src, dst, proto, seg.length);
  seg.set(_u16(_csum(seg, init)), at);
  return seg;
}

/** UDP in IPv4 or IPv6 (by the addresses' family). */
export function udp(src: string, dst: string, sport: number, dport: number, data: Uint8Array, id = 1): Uint8Array {
  const seg = _l4(src, dst, 17, _cat(_u16(sport), _u16(dport), _u16(8 + data.length), _u16(0), data), 6);
  return src.includes(":") ? ipv6(src, dst, 17, seg, 64, id) : ipv4(src, dst, 17, seg, id);
}

/** A TCP SYN in IPv4 or IPv6. */
export function tcpSyn(src: string, dst: string, sport: number, dport: number, id = 1): Uint8Array {
  const seg = _l4(
    src,
    dst,
    6,
    _cat(_u16(sport), _u16(dport), _u32(id), _u32(0), Uint8Array.of(0x50, 0x02), _u16(64240), _u16(0), _u16(0)),
    16,
  );
  return src.includes(":") ? ipv6(src, dst, 6, seg, 64, id) : ipv4(src, dst, 6, seg, id);
}

/** An ICMP echo request (IPv4). */
export function ping4(src: string, dst: string, ident: number): Uint8Array {
  return ipv4(
    src,
    dst,
    1,
    _l4(src, dst, 1, _cat(Uint8Array.of(8, 0), _u16(0), _u16(ident), _u16(1), new Uint8Array(8)), 2),
    ident,
  );
}

/** An ICMPv6 message of `type` with `body` after the 4-byte header, hop limit 255 as neighbour discovery wants. */
export function icmp6(src: string, dst: string, type: number, body: Uint8Array, flow = 0): Uint8Array {
  return ipv6(src, dst, 58, _l4(src, dst, 58, _cat(Uint8Array.of(type, 0), _u16(0), body), 2), 255, flow);
}

/** A neighbour advert (136) for `target` with the target link-layer address option. */
export function neighbourAdvert(src: string, dst: string, target: string, lladdr: string, flow = 0): Uint8Array {
  return icmp6(src, dst, 136, _cat(Uint8Array.of(0x20, 0, 0, 0), ip(target), Uint8Array.of(2, 1), mac(lladdr)), flow);
}

/** A router advert (134) with no options. */
export function routerAdvert(src: string, flow = 0): Uint8Array {
  return icmp6(src, "ff02::1", 134, _cat(Uint8Array.of(64, 0), _u16(1800), _u32(0), _u32(0)), flow);
}

/** An ARP packet (1 request, 2 reply) for Ethernet/IPv4; `tail` pads it uniquely. */
export function arp(op: 1 | 2, sha: string, spa: string, tha: string, tpa: string, tail = 0): Uint8Array {
  return _cat(Uint8Array.of(0, 1, 8, 0, 6, 4), _u16(op), mac(sha), ip(spa), mac(tha), ip(tpa), _u32(tail));
}

/** Hex of bytes, as the packet script reads them. */
export function hex(b: Uint8Array): string {
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/** Ether types. */
export const ETH = { ip: 0x0800, ip6: 0x86dd, arp: 0x0806 } as const;
