/**
 * The ruleset's keeper (000 §Instances): loads the policy a converge pass asks for, and every 5 seconds lists bcd's
 * tables and counts their rules and set elements against what it loaded, so a reload, `flush ruleset`, or a flushed
 * table, chain or set ends the trust at once. On a difference it loads the last policy again itself, outside any pass;
 * if that fails, the next pass's {@link NftKeeper.ensure} retries. Time is injected: {@link NftKeeper.tick} runs a
 * check only when one is due, and a driver (the node's timer, or a test) calls it.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log/mod.ts";
import { countDifferences, ListingMalformed, type RuleCounts } from "./counts.ts";
import { type NetPolicy, NetPolicyError } from "./policy.ts";
import { type Nft, NftFailed } from "./port.ts";
import { settled } from "../settled.ts";

/** The failures a load or a listing may end in: retried, never fatal to the node. */
export function isNftFailure(e: unknown): e is Error {
  return e instanceof NftFailed || e instanceof ListingMalformed || e instanceof NetPolicyError;
}

/** How often the tables are counted. */
export const INTEGRITY_INTERVAL_MS = 5_000;

/** Options of {@link NftKeeper}. */
export interface NftKeeperOptions {
  /** The clock the checks are spaced on (its monotonic time). */
  readonly clock: Pick<Clock, "monotonic">;
  readonly log: Logger;
  readonly intervalMs?: number;
}

/** What one integrity check found. */
export type IntegrityResult =
  | { readonly kind: "intact" }
  | { readonly kind: "reloaded"; readonly differences: readonly string[] }
  | { readonly kind: "failed"; readonly differences: readonly string[]; readonly error: string };

/** Loads the ruleset and keeps it loaded. */
export class NftKeeper {
  readonly #nft: Nft;
  readonly #o: NftKeeperOptions;
  #policy: NetPolicy | undefined;
  #key = "";
  #expect: RuleCounts | undefined;
  #broken = false;
  #lastCheck = Number.NEGATIVE_INFINITY;
  #running: Promise<unknown> = Promise.resolve();

  constructor(nft: Nft, opts: NftKeeperOptions) {
    this.#nft = nft;
    this.#o = opts;
  }

  /** Whether the last load succeeded and no check since found the tables changed without a successful reload. */
  get loaded(): boolean {
    return this.#expect !== undefined && !this.#broken;
  }

  /** The policy last asked for (loaded or not). */
  get policy(): NetPolicy | undefined {
    return this.#policy;
  }

  /**
   * Loads `policy` unless it is the one loaded and intact. Throws what the port throws (`NetPolicyError`,
   * `NftFailed`); the tables then stay as they were, and the next call tries again.
   */
  ensure(policy: NetPolicy): Promise<void> {
    return this.#serial(async () => {
      const key = JSON.stringify(policy);
      if (key === this.#key && this.loaded) return;
      this.#policy = policy;
      this.#key = key;
      await this.#load();
    });
  }

  /** Runs the integrity check when one is due; `undefined` when none was due or nothing was ever loaded. */
  tick(): Promise<IntegrityResult | undefined> {
    if (
      this.#policy === undefined ||
      this.#o.clock.monotonic() < this.#lastCheck + (this.#o.intervalMs ?? INTEGRITY_INTERVAL_MS)
    ) {
      return Promise.resolve(undefined);
    }
    return this.check();
  }

  /** Counts the tables now and reloads on a difference. */
  check(): Promise<IntegrityResult | undefined> {
    return this.#serial(async () => {
      this.#lastCheck = this.#o.clock.monotonic();
      if (this.#policy === undefined) return undefined;
      let differences: string[];
      try {
        differences = this.#expect === undefined
          ? ["the ruleset was never loaded"]
          : countDifferences(this.#expect, await this.#nft.list());
      } catch (e) {
        if (!isNftFailure(e)) throw e;
        const error = e.message;
        this.#o.log.warn({ err: error }, "nftables: listing bcd's tables failed; the next check retries");
        return { kind: "failed", differences: ["the tables could not be listed"], error } as const;
      }
      if (differences.length === 0 && !this.#broken) return { kind: "intact" } as const;
      this.#o.log.warn({ differences }, "nftables: bcd's tables changed; loading the last ruleset again");
      try {
        await this.#load();
        return { kind: "reloaded", differences } as const;
      } catch (e) {
        if (!isNftFailure(e)) throw e;
        const error = e.message;
        this.#o.log.warn({ err: error }, "nftables: reload failed; the next pass retries");
        return { kind: "failed", differences, error } as const;
      }
    });
  }

  async #load(): Promise<void> {
    this.#broken = true;
    this.#expect = await this.#nft.apply(this.#policy!);
    this.#broken = false;
    // A load is as good as a check: the next one is due a whole interval later.
    this.#lastCheck = this.#o.clock.monotonic();
  }

  /** One load or check at a time, in call order. */
  #serial<T>(f: () => Promise<T>): Promise<T> {
    const next = this.#running.then(f, f);
    this.#running = settled(next);
    return next;
  }
}
