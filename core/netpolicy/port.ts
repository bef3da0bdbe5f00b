/**
 * The nftables port: what bcd needs from the kernel's firewall, behind one interface with a real implementation (the
 * `nft` binary, in the root helper: `runtimes/nft/real_nft.ts`), the node's (the helper's `nft.apply`/`nft.list` ops:
 * `runtimes/helper/nft_port.ts`) and a fake (`runtimes/nft/fake_nft.ts`); one contract suite runs against all three.
 *
 * @module
 */
import type { RuleCounts } from "./counts.ts";
import type { NetPolicy } from "./policy.ts";

/** Loading or listing the ruleset failed (nft refused it, or could not run). */
export class NftFailed extends Error {
  override name = "NftFailed";
}

/** bcd's three tables in the kernel. */
export interface Nft {
  /**
   * Renders `policy` against the host's own addresses on the bridges its NICs name and loads it in one `nft -f`
   * transaction; returns the figures of what it loaded. A refused policy (`NetPolicyError`) or a failed load
   * (`NftFailed`) leaves the tables as they were.
   */
  apply(policy: NetPolicy): Promise<RuleCounts>;
  /** The figures of bcd's tables as the kernel holds them now; a missing table is absent. */
  list(): Promise<RuleCounts>;
}
