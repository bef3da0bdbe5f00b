/**
 * The node's network rules, ready to wire beside an instance runtime (000 §Instances, §Capabilities):
 *
 * - {@link NodeNetwork.prepare} before the session starts: when bcd's three tables are already in the kernel (a
 *   restarted daemon) they stay as they are, so running guests never lose their guard; otherwise the backstop and an
 *   empty bridge table are loaded. It answers the `Hello` capabilities the host may advertise:
 *   `instance.network-policy` and `instance.ssh-host-only` only when that worked.
 * - {@link NodeNetwork.rules}: the instances converger's `network` option.
 * - {@link NodeNetwork.start}: the 5-second integrity check, outside any converge pass (a timer calls the keeper's
 *   `tick`, which checks only when due), until {@link NodeNetwork.stop}.
 *
 * @example
 * ```ts
 * const net = new NodeNetwork(new HelperNft(helper), log);
 * const capabilities = [...(await net.prepare()), "devices.limits"];
 * const instances = new InstancesConverger(runtimes, { network: net.rules });
 * net.start();
 * ```
 *
 * `roles/node.ts` wires it in the `libvirt-kvm` branch only, since the seed advertises these capabilities on hosts
 * with a runtime. End-to-end tests that run a real `bcd-helper serve` as root give it the real `nft` only inside a
 * network namespace (`fixtures/testbed/node_helper.ts`), so `prepare` never loads bcd's tables into the test
 * machine's own ruleset.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { type Clock, realClock } from "../../core/clock.ts";
import { isNftFailure, NetworkRules, type Nft, NFT_TABLES, NftKeeper } from "../../core/netpolicy/mod.ts";

/** What a host that enforces the rules advertises in `Hello`. */
export const NETWORK_CAPABILITIES = ["instance.network-policy", "instance.ssh-host-only"] as const;

/** How often the timer asks the keeper whether a check is due. */
export const TICK_MS = 1_000;

/** Options of {@link NodeNetwork}. */
export interface NodeNetworkOptions {
  /** The clock the integrity checks are spaced on (default the real clock). */
  readonly clock?: Pick<Clock, "monotonic">;
}

/** The node's nftables rules: preparation, the converger's port, and the integrity timer. */
export class NodeNetwork {
  readonly keeper: NftKeeper;
  readonly rules: NetworkRules;
  readonly #nft: Nft;
  readonly #log: Logger;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(nft: Nft, log: Logger, opts: NodeNetworkOptions = {}) {
    this.#nft = nft;
    this.#log = log;
    this.keeper = new NftKeeper(nft, { clock: opts.clock ?? realClock, log });
    this.rules = new NetworkRules(this.keeper, log);
  }

  /** Makes sure bcd's tables exist; the capabilities to advertise (none when nft cannot load them). */
  async prepare(): Promise<readonly string[]> {
    try {
      const have = await this.#nft.list();
      if (NFT_TABLES.every((t) => have[t] !== undefined)) return NETWORK_CAPABILITIES;
      await this.#nft.apply({ nics: [] });
      return NETWORK_CAPABILITIES;
    } catch (e) {
      if (!isNftFailure(e)) throw e;
      this.#log.warn(
        { err: e.message },
        "nftables: bcd's tables cannot be loaded; instance.network-policy and instance.ssh-host-only are not advertised",
      );
      return [];
    }
  }

  /** Starts the integrity timer (idempotent). */
  start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.keeper.tick().catch((e) => this.#log.error({ err: String(e) }, "nftables: the integrity check threw"));
    }, TICK_MS);
    // The check never keeps the process alive by itself: a daemon that is stopping stops.
    Deno.unrefTimer(this.#timer);
  }

  /** Stops the integrity timer. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
