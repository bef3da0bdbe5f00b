/**
 * Tenant network isolation (000 §Instances: `network_policy`, anti-spoofing, `ssh_from_host_only`, the backstop
 * tables, the 5-second integrity check). The parts:
 *
 * - {@link planNetPolicy} (`plan.ts`): the `instances` section → a {@link NetPolicy} (one entry per NIC, deleted
 *   instances' guards kept while their domain lives) and the instances whose policy cannot be expressed.
 * - {@link addressOwners} (`plan.ts`): the instance each guarded address is bound to, never one two instances claim
 *   (what the metadata service and instance tunnels may trust).
 * - {@link checkNetPolicy} (`policy.ts`): the default-deny checks of every name and address, run before any text is
 *   built, in the node and again in the root helper.
 * - {@link renderRuleset} (`ruleset.ts`): the pure function from a policy and the host's own addresses to one
 *   `nft -f` transaction (`bridge bcd_instances` replaced atomically, `inet` and `arp bcd_taps`) and its expected
 *   figures.
 * - {@link countsOfNftJson}, {@link countDifferences} (`counts.ts`): the integrity check's figures.
 * - {@link NftKeeper} (`integrity.ts`): loads the policy, checks it every 5 s (clock injected) and reloads it.
 * - {@link NetworkRules} (`network_rules.ts`): the instances converger's `InstanceNetwork` over a keeper.
 * - {@link Nft} (`port.ts`): the kernel's side, implemented in `runtimes/nft/` (real `nft`, the helper, a fake).
 *
 * @example
 * ```ts
 * const { policy, failed } = planNetPolicy(section.instances ?? [], keeper.policy, liveDomainIds);
 * await keeper.ensure(policy); // before any domain starts
 * ```
 *
 * Judgement calls the seed left open, written down:
 * - The helper receives the policy as data, never ruleset text: root checks it with {@link checkNetPolicy}, looks up
 *   the host's addresses on the named bridges itself and renders the text with {@link renderRuleset}, so what it
 *   loads is only ever this grammar and only the tables `bridge bcd_instances`, `inet bcd_taps`, `arp bcd_taps`.
 * - The integrity check counts set elements as well as rules: a flushed set would loosen the rules without removing
 *   one.
 * - Tagged (802.1Q/802.1ad) frames from `bc*` taps are dropped, since the rules cannot look inside them; and frames
 *   into a `PRIVATE`/`NONE` tap must come from its reach set too (its subnets and the host, or the host), so the
 *   policy holds in both directions. Neighbour discovery and MLD are exempt from the reach sets (never from the
 *   anti-spoofing), or IPv6 would not resolve.
 * - `0.0.0.0` and `::` are accepted as a guarded NIC's source for any packet (DHCP, DAD), as the seed lists them.
 * - A deleted instance keeps its guard from the previous policy this process loaded; after a restart, only what the
 *   spec still names is guarded again.
 *
 * @module
 */
export { type Cidr, eui64LinkLocal, formatAddress, formatCidr, formatMac, parseCidr, parseMac } from "./addr.ts";
export {
  countDifferences,
  countsOfNftJson,
  ListingMalformed,
  MAX_LISTING_BYTES,
  NFT_TABLES,
  type NftTable,
  type RuleCounts,
  type TableCounts,
} from "./counts.ts";
export {
  INTEGRITY_INTERVAL_MS,
  type IntegrityResult,
  isNftFailure,
  NftKeeper,
  type NftKeeperOptions,
} from "./integrity.ts";
export { NetworkRules } from "./network_rules.ts";
export { addressOwners, isGuarded, planNetPolicy, type PolicyPlan } from "./plan.ts";
export {
  checkHostAddresses,
  checkNetPolicy,
  checkNic,
  isInterfaceName,
  MAX_HOST_ADDRESSES,
  MAX_NIC_ADDRESSES,
  MAX_POLICY_NICS,
  type NetPolicy,
  NetPolicyError,
  type NicPolicy,
  POLICY_KINDS,
  type PolicyKind,
} from "./policy.ts";
export { type Nft, NftFailed } from "./port.ts";
export { renderRuleset, type Ruleset } from "./ruleset.ts";
