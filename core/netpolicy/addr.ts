/**
 * Addresses as the network policy reads them: IPv4 and IPv6 addresses with an optional prefix, and MACs, parsed into
 * numbers by strict grammars of our own and printed back in one canonical spelling. The ruleset text is built only
 * from these canonical spellings, never from the strings a spec carried, so no spec value reaches `nft` verbatim.
 *
 * @module
 */

/** An IPv4 or IPv6 address with its prefix length (32 or 128 for a bare address). */
export interface Cidr {
  readonly family: 4 | 6;
  /** The address in network order: 4 or 16 bytes. */
  readonly bytes: Uint8Array;
  readonly prefix: number;
}

const _V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const _HEXGROUP = /^[0-9a-fA-F]{1,4}$/;
const _MAC = /^[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}$/;
/** The longest address text we read (an IPv6 address with an embedded IPv4 and a prefix fits). */
const MAX_ADDRESS_TEXT = 64;

function _v4(s: string): Uint8Array | undefined {
  if (!_V4.test(s)) return undefined;
  // The grammar holds: four decimal octets. Read them by hand (`Uint8Array.from` with a map function is slow in V8,
  // and the helper parses every address of every NIC on each load).
  const out = new Uint8Array(4);
  let k = 0, v = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 46) {
      out[k++] = v;
      v = 0;
    } else v = v * 10 + c - 48;
  }
  out[k] = v;
  return out;
}

function _groups(part: string): number[] | undefined {
  if (part === "") return [];
  const out: number[] = [];
  for (const g of part.split(":")) {
    if (!_HEXGROUP.test(g)) return undefined;
    out.push(parseInt(g, 16));
  }
  return out;
}

function _v6(s: string): Uint8Array | undefined {
  let text = s;
  if (text.includes(".")) {
    // An embedded IPv4 address as the last 32 bits (`::ffff:10.0.0.1`) is read as two hex groups.
    const lastColon = text.lastIndexOf(":");
    const v4 = lastColon < 0 ? undefined : _v4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    text = `${text.slice(0, lastColon + 1)}${((v4[0]! << 8) | v4[1]!).toString(16)}:${
      ((v4[2]! << 8) | v4[3]!).toString(16)
    }`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = _groups(halves[0]!);
  const rest = halves.length === 2 ? _groups(halves[1]!) : [];
  if (head === undefined || rest === undefined) return undefined;
  const known = head.length + rest.length;
  let groups: number[];
  if (halves.length === 2) {
    if (known > 7) return undefined;
    groups = [...head, ...Array<number>(8 - known).fill(0), ...rest];
  } else {
    if (known !== 8) return undefined;
    groups = head;
  }
  const out = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    out[2 * i] = groups[i]! >> 8;
    out[2 * i + 1] = groups[i]! & 255;
  }
  return out;
}

/**
 * Parses `a.b.c.d`, an IPv6 address, or either with `/prefix`. Returns `undefined` for anything else (zone ids,
 * leading zeros in IPv4 octets, prefixes out of range, text over 64 characters).
 */
export function parseCidr(s: string): Cidr | undefined {
  if (typeof s !== "string" || s.length === 0 || s.length > MAX_ADDRESS_TEXT) return undefined;
  const slash = s.indexOf("/");
  const addr = slash < 0 ? s : s.slice(0, slash);
  const pfx = slash < 0 ? undefined : s.slice(slash + 1);
  if (pfx !== undefined && !/^(?:0|[1-9]\d{0,2})$/.test(pfx)) return undefined;
  const v4 = _v4(addr);
  if (v4 !== undefined) {
    const prefix = pfx === undefined ? 32 : Number(pfx);
    return prefix <= 32 ? { family: 4, bytes: v4, prefix } : undefined;
  }
  if (!addr.includes(":")) return undefined;
  const v6 = _v6(addr);
  if (v6 === undefined) return undefined;
  const prefix = pfx === undefined ? 128 : Number(pfx);
  return prefix <= 128 ? { family: 6, bytes: v6, prefix } : undefined;
}

/** The address without its prefix, in canonical text (RFC 5952 for IPv6: lowercase, longest zero run as `::`). */
export function formatAddress(family: 4 | 6, b: Uint8Array): string {
  if (family === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const g: number[] = [];
  for (let i = 0; i < 8; i++) g.push((b[2 * i]! << 8) | b[2 * i + 1]!);
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  if (best < 0) return _hexGroups(g, 0, 8);
  return `${_hexGroups(g, 0, best)}::${_hexGroups(g, best + bestLen, 8)}`;
}

/** `g[from..to)` as colon-separated lowercase hex. */
function _hexGroups(g: readonly number[], from: number, to: number): string {
  let s = "";
  for (let i = from; i < to; i++) s += i === from ? g[i]!.toString(16) : `:${g[i]!.toString(16)}`;
  return s;
}

/** The width of a family's addresses in bits. */
export function bitsOf(family: 4 | 6): number {
  return family === 4 ? 32 : 128;
}

/** `b` with every bit past the first `prefix` cleared. */
function _masked(b: Uint8Array, prefix: number): Uint8Array {
  const out = b.slice();
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - 8 * i));
    out[i]! &= (0xff << (8 - keep)) & 0xff;
  }
  return out;
}

/** The network of `c` (host bits cleared), with the same prefix. */
export function networkOf(c: Cidr): Cidr {
  return { family: c.family, bytes: _masked(c.bytes, c.prefix), prefix: c.prefix };
}

/** `c` in canonical text: `a.b.c.d/p`, or the bare address when the prefix is the whole width. */
export function formatCidr(c: Cidr): string {
  const a = formatAddress(c.family, c.bytes);
  return c.prefix === bitsOf(c.family) ? a : `${a}/${c.prefix}`;
}

/** Whether `inner` lies wholly inside `outer` (same family, longer or equal prefix, same network bits). */
export function contains(outer: Cidr, inner: Cidr): boolean {
  if (outer.family !== inner.family || inner.prefix < outer.prefix) return false;
  const full = outer.prefix >> 3, rem = outer.prefix & 7;
  for (let i = 0; i < full; i++) if (outer.bytes[i] !== inner.bytes[i]) return false;
  if (rem === 0) return true;
  const m = (0xff << (8 - rem)) & 0xff;
  return (outer.bytes[full]! & m) === (inner.bytes[full]! & m);
}

/** Every byte's two lowercase hex digits. */
const _HEX2 = Array.from({ length: 256 }, (_, x) => x.toString(16).padStart(2, "0"));

/** Bytes as lowercase hex. */
export function hexOf(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i++) s += _HEX2[b[i]!]!;
  return s;
}

/** A MAC as six bytes, or `undefined` unless it is `xx:xx:xx:xx:xx:xx` in hex. */
export function parseMac(s: string): Uint8Array | undefined {
  if (typeof s !== "string" || !_MAC.test(s)) return undefined;
  const out = new Uint8Array(6);
  for (let i = 0; i < 6; i++) out[i] = parseInt(s.slice(3 * i, 3 * i + 2), 16);
  return out;
}

/** A MAC in canonical text (lowercase, colon-separated). */
export function formatMac(b: Uint8Array): string {
  return hexOf(b).replace(/(..)(?!$)/g, "$1:");
}

/** Why `mac` cannot be a NIC's own unicast address (group bit, all zeros), or `undefined` when it can. */
export function macProblem(mac: Uint8Array): string | undefined {
  if ((mac[0]! & 1) === 1) return "is a group (multicast or broadcast) address";
  if (mac.every((x) => x === 0)) return "is all zeros";
  return undefined;
}

/**
 * The EUI-64 link-local address a guest derives from its MAC for neighbour discovery (RFC 4291 appendix A):
 * `fe80::` + the MAC with `ff:fe` in the middle and the universal/local bit flipped.
 */
export function eui64LinkLocal(mac: Uint8Array): Uint8Array {
  const out = new Uint8Array(16);
  out[0] = 0xfe;
  out[1] = 0x80;
  out[8] = mac[0]! ^ 0x02;
  out[9] = mac[1]!;
  out[10] = mac[2]!;
  out[11] = 0xff;
  out[12] = 0xfe;
  out[13] = mac[3]!;
  out[14] = mac[4]!;
  out[15] = mac[5]!;
  return out;
}

/**
 * Why `c` cannot be a guarded IPAM address (unspecified, loopback, multicast, link-local, broadcast), or `undefined`.
 * A NIC's own link-local address is derived from its MAC, never taken from the spec.
 */
export function ipamProblem(c: Cidr): string | undefined {
  const b = c.bytes;
  const zero = b.every((x) => x === 0);
  if (c.family === 4) {
    const top = b[0]!;
    if (zero) return "is the unspecified address";
    if (top === 127) return "is a loopback address";
    if (top >= 224 && top <= 239) return "is a multicast address";
    if (b.every((x) => x === 255)) return "is the broadcast address";
    if (top === 0) return "is in 0.0.0.0/8";
    if (top >= 240) return "is in the reserved range 240.0.0.0/4";
    return undefined;
  }
  if (zero) return "is the unspecified address";
  if (b.subarray(0, 15).every((x) => x === 0) && b[15] === 1) return "is the loopback address";
  if (b[0] === 0xff) return "is a multicast address";
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) {
    return "is a link-local address (bcd derives the NIC's own from its MAC)";
  }
  return undefined;
}
