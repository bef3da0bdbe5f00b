/**
 * The node's {@link Nft}: the root helper's `nft.apply` and `nft.list` ops. The node sends the policy as data; root
 * checks it, looks up the host's addresses on the bridges it names, renders and loads the ruleset, and answers the
 * figures of what it loaded. It keeps the port's promise: a policy root refused (`invalid-argument`) is a
 * `NetPolicyError`, any other refusal or failure of the helper (unreachable, timeout, nft failed, a malformed answer)
 * an `NftFailed`, each with the `HelperError` as its cause — so `core/netpolicy` never needs to know the helper.
 *
 * @module
 */
import { HelperError } from "../../core/helper/mod.ts";
import {
  type NetPolicy,
  NetPolicyError,
  type Nft,
  NFT_TABLES,
  NftFailed,
  type RuleCounts,
} from "../../core/netpolicy/mod.ts";
import type { HelperClient } from "./client.ts";

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

/** A helper's error as the port's: a refused policy, or a failed load or listing. Anything else is passed through. */
function _portError(e: unknown): unknown {
  if (!(e instanceof HelperError)) return e;
  if (e.code === "invalid-argument") return new NetPolicyError(e.message, undefined, { cause: e });
  return new NftFailed(e.message, { cause: e });
}

/** bcd's tables, through the helper. */
export class HelperNft implements Nft {
  constructor(private readonly c: HelperClient) {}

  async apply(policy: NetPolicy): Promise<RuleCounts> {
    try {
      return _counts("nft.apply", (await this.c.call("nft.apply", { policy })).counts);
    } catch (e) {
      throw _portError(e);
    }
  }

  async list(): Promise<RuleCounts> {
    try {
      return _counts("nft.list", (await this.c.call("nft.list", {})).counts);
    } catch (e) {
      throw _portError(e);
    }
  }
}
