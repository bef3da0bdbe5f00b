/**
 * The instances converger's network rules over an {@link NftKeeper}: plans the policy for the section
 * ({@link planNetPolicy}), loads it before any domain starts, and turns what cannot be expressed or loaded into the
 * verdict the converger acts on (000 §Instances).
 *
 * @module
 */
import type { bcd } from "../../proto/mod.ts";
import type { InstanceNetwork, NetworkVerdict } from "../converge/instances/network.ts";
import type { Logger } from "../log/mod.ts";
import { isNftFailure, type NftKeeper } from "./integrity.ts";
import { isGuarded, planNetPolicy } from "./plan.ts";

type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

const _DELETED = 4;

/** {@link InstanceNetwork} over a keeper. */
export class NetworkRules implements InstanceNetwork {
  constructor(private readonly keeper: NftKeeper, private readonly log: Logger) {}

  async load(instances: readonly InstanceSpec[], live: ReadonlySet<string>): Promise<NetworkVerdict> {
    const plan = planNetPolicy(instances, this.keeper.policy, live);
    const failed = new Map(plan.failed);
    try {
      await this.keeper.ensure(plan.policy);
      return { failed };
    } catch (e) {
      if (!isNftFailure(e)) throw e;
      const loadError = e.message;
      this.log.warn(
        { err: loadError },
        "nftables: the instances' rules did not load; guarded instances fail, egress instances keep running, the next pass retries",
      );
      for (const i of instances) {
        const id = i.id ?? "";
        if (id !== "" && Number(i.state ?? 0) !== _DELETED && isGuarded(i) && !failed.has(id)) {
          failed.set(id, `network rules did not load: ${loadError}`);
        }
      }
      return { failed, loadError };
    }
  }
}
