/**
 * The node's {@link Nft}: the root helper's `nft.apply` and `nft.list` ops. The node sends the policy as data; root
 * checks it, looks up the host's addresses on the bridges it names, renders and loads the ruleset, and answers the
 * figures of what it loaded. A refusal or failure is a `HelperError` (`helper: …`).
 *
 * @module
 */
import { HelperError } from "../../core/helper/mod.ts";
import { type NetPolicy, type Nft, NFT_TABLES, type RuleCounts } from "../../core/netpolicy/mod.ts";
import type { HelperClient } from "../helper/client.ts";

function _isFigures(v: unknown): boolean {
  return typeof v === "object" && v !== null && !Array.isArray(v) &&
    Object.values(v).every((n) => Number.isSafeInteger(n) && (n as number) >= 0);
}

/** Checks an answer's `counts`: only bcd's tables, each with numeric `chains` and `sets`. */
function _counts(op: string, v: unknown): RuleCounts {
  const ok = typeof v === "object" && v !== null && !Array.isArray(v) &&
    Object.entries(v).every(([t, c]) =>
      (NFT_TABLES as readonly string[]).includes(t) && typeof c === "object" && c !== null &&
      _isFigures((c as Record<string, unknown>).chains) && _isFigures((c as Record<string, unknown>).sets)
    );
  if (!ok) throw new HelperError("malformed", `${op}: the answer's counts`);
  return v as RuleCounts;
}

/** bcd's tables, through the helper. */
export class HelperNft implements Nft {
  constructor(private readonly c: HelperClient) {}

  async apply(policy: NetPolicy): Promise<RuleCounts> {
    return _counts("nft.apply", (await this.c.call("nft.apply", { policy })).counts);
  }

  async list(): Promise<RuleCounts> {
    return _counts("nft.list", (await this.c.call("nft.list", {})).counts);
  }
}
