/**
 * The network policy as data: per instance NIC its tap (named by `tapName(instance, index)`), bridge, policy, MAC and
 * IPAM addresses, and whether its tcp/22 is taken only from the host. This is what the node sends the helper's
 * `nft.apply` and what the ruleset is rendered from; {@link checkNetPolicy} checks every field default-deny before any
 * text is built, on both sides of the helper socket.
 *
 * | field             | rule                                                                                       |
 * | ----------------- | ------------------------------------------------------------------------------------------ |
 * | `instance`        | 1–128 of `[A-Za-z0-9_.:-]`, starting alphanumeric (it is hashed into the tap name, never printed) |
 * | `index`           | integer 0 … `MAX_NICS`-1 (three base-36 digits of the tap name)                            |
 * | `bridge`          | a Linux interface name (1–15 of `[A-Za-z0-9_.-]`, not `.`/`..`) not starting with `bc`      |
 * | `policy`          | `egress`, `private` or `none`                                                              |
 * | `sshFromHostOnly` | boolean                                                                                    |
 * | `mac`             | `xx:xx:xx:xx:xx:xx`, unicast, not all zeros; required by `private` and `none`             |
 * | `addresses`       | at most {@link MAX_NIC_ADDRESSES} IPv4/IPv6 addresses with prefix, not unspecified, loopback, multicast, link-local or broadcast; at least one for `private` and `none` |
 *
 * At most {@link MAX_POLICY_NICS} NICs, each `(instance, index)` once, and no two NICs on one tap name.
 *
 * @module
 */
import { tapName } from "../converge/instances/tap_name.ts";
import { type Cidr, formatCidr, ipamProblem, macProblem, parseCidr, parseMac } from "./addr.ts";

/** `EGRESS` adds nothing; `PRIVATE` keeps a NIC to its IPAM subnets and the host; `NONE` to the host only. */
export type PolicyKind = "egress" | "private" | "none";

/** The policies, in the proto enum's order. */
export const POLICY_KINDS: readonly PolicyKind[] = ["egress", "private", "none"];

/** One NIC of one instance, as the rules see it. */
export interface NicPolicy {
  readonly instance: string;
  readonly index: number;
  readonly bridge: string;
  readonly policy: PolicyKind;
  readonly sshFromHostOnly: boolean;
  /** Canonical lowercase MAC; absent when the spec gave none. */
  readonly mac?: string;
  /** Canonical `address/prefix` texts. */
  readonly addresses: readonly string[];
}

/** Every NIC the rules cover: the desired instances' and those of deleted instances whose domain still exists. */
export interface NetPolicy {
  readonly nics: readonly NicPolicy[];
}

/** The most NICs one policy covers. */
export const MAX_POLICY_NICS = 8192;
/** The most IPAM addresses one NIC carries. */
export const MAX_NIC_ADDRESSES = 32;
/** The most host addresses the rules name. */
export const MAX_HOST_ADDRESSES = 256;

const _INSTANCE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const _IFNAME = /^[A-Za-z0-9_.-]{1,15}$/;
const _FIELDS = ["instance", "index", "bridge", "policy", "sshFromHostOnly", "mac", "addresses"];

/** A policy that cannot be expressed, or a value refused before any ruleset text is built. */
export class NetPolicyError extends Error {
  override name = "NetPolicyError";
  /** `instance`: the instance the refusal is about, when it is about one. */
  constructor(message: string, readonly instance?: string, options?: ErrorOptions) {
    super(message, options);
  }
}

function _show(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch {
    s = String(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Whether `s` is a Linux interface name bcd may print. */
export function isInterfaceName(s: unknown): s is string {
  return typeof s === "string" && _IFNAME.test(s) && s !== "." && s !== "..";
}

/** Whether `s` is an instance id the rules accept. */
export function isInstanceId(s: unknown): s is string {
  return typeof s === "string" && _INSTANCE.test(s);
}

/**
 * IPAM address texts already judged: the parsed address and its canonical text, or why it cannot be guarded. The
 * helper gets the whole policy on every load and most addresses come back unchanged, so each text is parsed once
 * (bounded: cleared when full). Entries are never handed out for mutation: the renderer only reads them.
 */
const _ADDRESSES = new Map<string, { readonly cidr: Cidr; readonly text: string } | string>();
const _ADDRESSES_MAX = 4 * MAX_POLICY_NICS;

/** Parses a NIC's IPAM address, throwing {@link NetPolicyError} with the value when it cannot be guarded. */
export function checkIpamAddress(s: unknown, where: string, instance?: string): Cidr {
  return _ipam(s, where, instance).cidr;
}

function _ipam(s: unknown, where: string, instance?: string): { readonly cidr: Cidr; readonly text: string } {
  let v = typeof s === "string" ? _ADDRESSES.get(s) : undefined;
  if (v === undefined) {
    const c = typeof s === "string" ? parseCidr(s) : undefined;
    const p = c === undefined ? "is not an IPv4 or IPv6 address" : ipamProblem(c);
    v = p !== undefined ? p : { cidr: c!, text: formatCidr(c!) };
    if (typeof s === "string") {
      if (_ADDRESSES.size >= _ADDRESSES_MAX) _ADDRESSES.clear();
      _ADDRESSES.set(s, v);
    }
  }
  if (typeof v === "string") throw new NetPolicyError(`${where} ${_show(s)} ${v}`, instance);
  return v;
}

/** A checked NIC with what the renderer needs already parsed. */
export interface ParsedNic {
  readonly nic: NicPolicy;
  readonly tap: string;
  readonly mac?: Uint8Array;
  /** Its addresses, in the order of `nic.addresses`. */
  readonly own: readonly Cidr[];
}

/** Tap names already computed (the same instances come back on every load); cleared when it reaches its bound. */
const _TAPS = new Map<string, string>();
const _TAPS_MAX = 4 * MAX_POLICY_NICS;

/** `tapName(instance, index)`, remembered. Throws its `RangeError`. */
function _tap(instance: string, index: number): string {
  const k = `${index}/${instance}`;
  let t = _TAPS.get(k);
  if (t === undefined) {
    t = tapName(instance, index);
    if (_TAPS.size >= _TAPS_MAX) _TAPS.clear();
    _TAPS.set(k, t);
  }
  return t;
}

/** Policies {@link checkNetPolicy} returned (frozen), with their NICs parsed: rendering them does not check again. */
const _PARSED = new WeakMap<NetPolicy, readonly ParsedNic[]>();

/** Checks one NIC and returns it in canonical form. */
export function checkNic(raw: unknown, where = "nic"): NicPolicy {
  return _checkNic(raw, where).nic;
}

function _checkNic(raw: unknown, where: string): ParsedNic {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new NetPolicyError(`${where} is not an object`);
  }
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!_FIELDS.includes(k)) throw new NetPolicyError(`${where} has an unknown field ${_show(k)}`);
  }
  if (!isInstanceId(o.instance)) {
    throw new NetPolicyError(`${where}.instance ${_show(o.instance)} is not an instance id`);
  }
  const id = o.instance;
  const at = `instance ${id} NIC ${_show(o.index)}`;
  if (typeof o.index !== "number" || !Number.isInteger(o.index) || o.index < 0) {
    throw new NetPolicyError(`${where}.index ${_show(o.index)} is not a NIC index`, id);
  }
  let tap: string;
  try {
    tap = _tap(id, o.index);
  } catch (e) {
    if (e instanceof RangeError) throw new NetPolicyError(`${at}: ${e.message}`, id, { cause: e });
    throw e;
  }
  if (!isInterfaceName(o.bridge)) {
    throw new NetPolicyError(`${at}: bridge ${_show(o.bridge)} is not an interface name`, id);
  }
  if (o.bridge.startsWith("bc")) {
    throw new NetPolicyError(`${at}: bridge ${_show(o.bridge)} starts with "bc", so every tap rule would match it`, id);
  }
  if (typeof o.policy !== "string" || !(POLICY_KINDS as readonly string[]).includes(o.policy)) {
    throw new NetPolicyError(`${at}: policy ${_show(o.policy)} is not one of ${POLICY_KINDS.join(", ")}`, id);
  }
  if (typeof o.sshFromHostOnly !== "boolean") {
    throw new NetPolicyError(`${at}: sshFromHostOnly ${_show(o.sshFromHostOnly)} is not a boolean`, id);
  }
  let mac: string | undefined;
  let macBytes: Uint8Array | undefined;
  if (o.mac !== undefined) {
    macBytes = typeof o.mac === "string" ? parseMac(o.mac) : undefined;
    if (macBytes === undefined) throw new NetPolicyError(`${at}: mac ${_show(o.mac)} is not a MAC address`, id);
    const p = macProblem(macBytes);
    if (p !== undefined) throw new NetPolicyError(`${at}: mac ${_show(o.mac)} ${p}`, id);
    mac = (o.mac as string).toLowerCase(); // parseMac accepted it: six colon-separated hex pairs
  }
  if (!Array.isArray(o.addresses) || o.addresses.length > MAX_NIC_ADDRESSES) {
    throw new NetPolicyError(`${at}: addresses is not a list of at most ${MAX_NIC_ADDRESSES}`, id);
  }
  const byText = new Map<string, Cidr>();
  for (const [i, a] of o.addresses.entries()) {
    const { cidr, text } = _ipam(a, `${at}: addresses[${i}]`, id);
    byText.set(text, cidr);
  }
  const addresses = [...byText.keys()];
  const policy = o.policy as PolicyKind;
  if (policy !== "egress" && (mac === undefined || addresses.length === 0)) {
    throw new NetPolicyError(
      `${at}: policy ${policy} cannot be expressed for a NIC without ${mac === undefined ? "a MAC" : "IPAM addresses"}`,
      id,
    );
  }
  const nic: NicPolicy = Object.freeze({
    instance: id,
    index: o.index,
    bridge: o.bridge,
    policy,
    sshFromHostOnly: o.sshFromHostOnly,
    ...(mac !== undefined ? { mac } : {}),
    addresses: Object.freeze(addresses),
  });
  return { nic, tap, ...(macBytes !== undefined ? { mac: macBytes } : {}), own: [...byText.values()] };
}

/** Checks a whole policy (see the table above) and returns it in canonical form. */
export function checkNetPolicy(raw: unknown): NetPolicy {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new NetPolicyError("policy is not an object");
  }
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (k !== "nics") throw new NetPolicyError(`policy has an unknown field ${_show(k)}`);
  }
  if (!Array.isArray(o.nics) || o.nics.length > MAX_POLICY_NICS) {
    throw new NetPolicyError(`policy.nics is not a list of at most ${MAX_POLICY_NICS} NICs`);
  }
  const parsed = o.nics.map((n, i) => _checkNic(n, `policy.nics[${i}]`));
  const taps = new Map<string, NicPolicy>();
  for (const { nic: n, tap } of parsed) {
    const other = taps.get(tap);
    if (other !== undefined) {
      const what = other.instance === n.instance
        ? `instance ${n.instance} lists NIC ${n.index} twice`
        : `instances ${other.instance} and ${n.instance} share the tap name ${tap}`;
      throw new NetPolicyError(`policy: ${what}`, n.instance);
    }
    taps.set(tap, n);
  }
  const policy: NetPolicy = Object.freeze({ nics: Object.freeze(parsed.map((p) => p.nic)) });
  _PARSED.set(policy, parsed);
  return policy;
}

/** The parsed NICs of `policy`: those recorded when {@link checkNetPolicy} returned it, else it is checked now. */
export function parsedNics(policy: NetPolicy): readonly ParsedNic[] {
  return _PARSED.get(policy) ?? _PARSED.get(checkNetPolicy(policy))!;
}

/** Checks the host's own addresses (bare IPv4/IPv6 addresses) and returns them canonical, without duplicates. */
export function checkHostAddresses(raw: unknown): string[] {
  if (!Array.isArray(raw) || raw.length > MAX_HOST_ADDRESSES) {
    throw new NetPolicyError(`host addresses are not a list of at most ${MAX_HOST_ADDRESSES}`);
  }
  const out = raw.map((a, i) => {
    const c = typeof a === "string" ? parseCidr(a) : undefined;
    if (c === undefined || a.includes("/")) {
      throw new NetPolicyError(`host address [${i}] ${_show(a)} is not a bare IPv4 or IPv6 address`);
    }
    return formatCidr(c);
  });
  return [...new Set(out)];
}
