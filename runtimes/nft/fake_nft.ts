/**
 * A fake kernel firewall for tests: `apply` renders the policy with the real renderer (so a refused policy is refused
 * the same way) against fixed host addresses and keeps the figures of what it loaded; `list` answers them. A test
 * plays the host's operator with {@link FakeNft.flushRuleset}, {@link FakeNft.flushChain} and
 * {@link FakeNft.failApplies}.
 *
 * @module
 */
import {
  type NetPolicy,
  type Nft,
  NftFailed,
  type NftTable,
  renderRuleset,
  type RuleCounts,
  type TableCounts,
} from "../../core/netpolicy/mod.ts";

/** Options of {@link FakeNft}. */
export interface FakeNftOptions {
  /** The host's addresses on every bridge (default none). */
  readonly hostAddresses?: readonly string[];
}

/** bcd's tables, in memory. */
export class FakeNft implements Nft {
  #tables: Partial<Record<NftTable, TableCounts>> = {};
  #failures = 0;
  readonly #host: readonly string[];
  /** Every ruleset text loaded, in order. */
  readonly loaded: string[] = [];
  /** How many times `list` ran. */
  lists = 0;

  constructor(opts: FakeNftOptions = {}) {
    this.#host = opts.hostAddresses ?? [];
  }

  // deno-lint-ignore require-await
  async apply(policy: NetPolicy): Promise<RuleCounts> {
    const { text, expect } = renderRuleset(policy, this.#host);
    if (this.#failures > 0) {
      this.#failures--;
      throw new NftFailed("nft -f refused the ruleset (exit 1): fake failure");
    }
    this.#tables = structuredClone(expect) as Partial<Record<NftTable, TableCounts>>;
    this.loaded.push(text);
    return expect;
  }

  list(): Promise<RuleCounts> {
    this.lists++;
    return Promise.resolve(structuredClone(this.#tables));
  }

  /** `nft flush ruleset`: every table gone. */
  flushRuleset(): void {
    this.#tables = {};
  }

  /** `nft flush chain <table> <chain>`: the chain stays, its rules go. */
  flushChain(table: NftTable, chain: string): void {
    const t = this.#tables[table];
    if (t === undefined || !(chain in t.chains)) throw new RangeError(`no chain ${chain} in ${table}`);
    this.#tables[table] = { chains: { ...t.chains, [chain]: 0 }, sets: t.sets };
  }

  /** The next `n` applies fail as a refusing `nft -f` would, leaving the tables as they are. */
  failApplies(n: number): void {
    this.#failures = n;
  }
}
