/**
 * The instances' network rules as the converger sees them (000 §Instances): before any domain starts, the rules for
 * the whole section are loaded; an instance whose policy cannot be expressed fails (and stops if it runs), and when
 * the rules do not load, every instance they would guard (`PRIVATE`, `NONE`, `ssh_from_host_only`) fails the same
 * way while egress instances keep running, and the next pass tries again. Implemented by `core/netpolicy`'s
 * `NetworkRules`.
 *
 * @module
 */
import type { bcd } from "../../../proto/mod.ts";

type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

/** What loading the rules decided for this pass. */
export interface NetworkVerdict {
  /** Instance id → why it cannot run under the rules. */
  readonly failed: ReadonlyMap<string, string>;
  /** Why the rules did not load, when they did not; the section stays `PROGRESSING` and the next pass retries. */
  readonly loadError?: string;
}

/** The reason an instance the rules refuse carries. */
export const NETWORK_POLICY_REASON = "network-policy";

/** The network rules port. */
export interface InstanceNetwork {
  /**
   * Loads the rules for `instances`, keeping the guards of instances no longer wanted whose domain is in `live`.
   * Never throws for a refused policy or a failed load: both come back in the verdict.
   */
  load(instances: readonly InstanceSpec[], live: ReadonlySet<string>): Promise<NetworkVerdict>;
}
