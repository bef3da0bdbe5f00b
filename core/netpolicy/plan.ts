/**
 * From the `instances` section to the {@link NetPolicy} the rules are rendered from (000 §Instances): one entry per
 * NIC of every instance that is not `DELETED`, and, so that a deleted instance keeps its guard until its domain is
 * gone, the NICs the previous policy held for instances whose domain still exists. A NIC whose policy cannot be
 * expressed (no MAC or no IPAM addresses under `PRIVATE`/`NONE`), a bridge starting with `bc`, or any value the
 * checks refuse fails its whole instance, with the message saying which NIC and why; the others are still ruled.
 *
 * @module
 */
import type { bcd } from "../../proto/mod.ts";
import { tapName } from "../converge/instances/tap_name.ts";
import { checkNic, type NetPolicy, NetPolicyError, type NicPolicy, type PolicyKind } from "./policy.ts";

type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

/** The rules to load and the instances that cannot have them. */
export interface PolicyPlan {
  readonly policy: NetPolicy;
  /** Instance id → why its policy cannot be expressed; such an instance fails (and stops if it runs). */
  readonly failed: ReadonlyMap<string, string>;
}

const _KINDS: Record<string, PolicyKind> = { "0": "egress", "1": "private", "2": "none" };
const _NAMES: Record<string, PolicyKind> = { EGRESS: "egress", PRIVATE: "private", NONE: "none" };
const _DELETED = 4;

function _policy(v: unknown): PolicyKind | undefined {
  if (v === undefined || v === null) return "egress";
  return _KINDS[String(v)] ?? _NAMES[String(v)];
}

/** The NICs of one instance, or the reason its policy cannot be expressed. */
function _nics(i: InstanceSpec): NicPolicy[] | string {
  const id = i.id ?? "";
  const policy = _policy(i.network_policy);
  if (policy === undefined) return `network_policy ${JSON.stringify(i.network_policy)} is not EGRESS, PRIVATE or NONE`;
  const out: NicPolicy[] = [];
  for (const [index, nic] of (i.nics ?? []).entries()) {
    try {
      out.push(checkNic({
        instance: id,
        index,
        bridge: nic.bridge ?? "",
        policy,
        sshFromHostOnly: i.ssh_from_host_only === true,
        ...(nic.mac ? { mac: nic.mac } : {}),
        addresses: nic.ipam_addresses ?? [],
      }));
    } catch (e) {
      if (e instanceof NetPolicyError) return e.message;
      throw e;
    }
  }
  return out;
}

/**
 * The policy for `instances`, keeping `previous`'s NICs of every instance in `liveDomains` that is no longer
 * wanted (absent or `DELETED`). Never throws for a bad instance: it lands in `failed`.
 */
export function planNetPolicy(
  instances: readonly InstanceSpec[],
  previous: NetPolicy | undefined,
  liveDomains: ReadonlySet<string>,
): PolicyPlan {
  const failed = new Map<string, string>();
  const nics: NicPolicy[] = [];
  const taps = new Map<string, string>();
  const wanted = new Set<string>();
  const take = (id: string, ns: readonly NicPolicy[]): string | undefined => {
    for (const n of ns) {
      const other = taps.get(tapName(n.instance, n.index));
      if (other !== undefined && other !== id) return `its tap ${tapName(n.instance, n.index)} is instance ${other}'s`;
    }
    for (const n of ns) taps.set(tapName(n.instance, n.index), id);
    nics.push(...ns);
    return undefined;
  };
  for (const i of instances) {
    const id = i.id ?? "";
    if (Number(i.state ?? 0) === _DELETED || id === "") continue;
    wanted.add(id);
    const r = _nics(i);
    const clash = typeof r === "string" ? r : take(id, r);
    if (clash !== undefined) failed.set(id, `network policy: ${clash}`);
  }
  for (const n of previous?.nics ?? []) {
    if (wanted.has(n.instance) || !liveDomains.has(n.instance)) continue;
    take(n.instance, [n]);
  }
  return { policy: { nics }, failed };
}

/** Whether the rules guard `i` beyond anti-spoofing (`PRIVATE`/`NONE`, or tcp/22 from the host only). */
export function isGuarded(i: InstanceSpec): boolean {
  const p = _policy(i.network_policy);
  return (p !== undefined && p !== "egress") || i.ssh_from_host_only === true;
}

/**
 * The instance each guarded address is bound to, for the services that name an instance by its address (the metadata
 * service, instance tunnels): only addresses of NICs the rules guard (a MAC and IPAM addresses), and never one that
 * two instances claim (000 §Instances). Keys are canonical bare addresses.
 */
export function addressOwners(policy: NetPolicy): Map<string, string> {
  const owners = new Map<string, string>();
  const shared = new Set<string>();
  for (const n of policy.nics) {
    if (n.mac === undefined) continue;
    for (const a of n.addresses) {
      const bare = a.split("/")[0]!;
      const other = owners.get(bare);
      if (other !== undefined && other !== n.instance) shared.add(bare);
      owners.set(bare, n.instance);
    }
  }
  for (const a of shared) owners.delete(a);
  return owners;
}
