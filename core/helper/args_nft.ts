/**
 * The helper's argument checks for the nftables ops (000 §Instances; privilege separation): the node sends the
 * network policy as data, never ruleset text, and root checks every field with the policy's own default-deny table
 * (`core/netpolicy/policy.ts`) before it looks up the host's addresses and renders the only grammar it loads.
 *
 * | op          | fields   | rule                                                                         |
 * | ----------- | -------- | ---------------------------------------------------------------------------- |
 * | `nft.apply` | `policy` | `{nics: [...]}`, each NIC checked by `checkNic` (instance, index, bridge, policy, sshFromHostOnly, mac, addresses) |
 * | `nft.list`  | none     |                                                                              |
 *
 * The tables root touches are fixed: `bridge bcd_instances`, `inet bcd_taps`, `arp bcd_taps`; no name from the node
 * reaches the text but through `tapName` and the canonical spelling of parsed addresses.
 *
 * @module
 */
import { checkNetPolicy, NetPolicyError } from "../netpolicy/policy.ts";
import { HelperError } from "./errors.ts";
import type { HelperArgs } from "./protocol.ts";

function _fields(op: string, raw: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new HelperError("invalid-argument", `${op}: args is not an object`);
  }
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw new HelperError("unknown-field", `${op}: unknown field args.${k}`);
  }
  for (const k of allowed) {
    if (o[k] === undefined) throw new HelperError("invalid-argument", `${op}: args.${k} is missing`);
  }
  return o;
}

/** The checkers of `nft.apply` and `nft.list`, joined into the helper's argument table. */
export const NFT_ARG_CHECKS: {
  readonly "nft.apply": (raw: unknown) => HelperArgs["nft.apply"];
  readonly "nft.list": (raw: unknown) => HelperArgs["nft.list"];
} = {
  "nft.apply": (raw) => {
    const a = _fields("nft.apply", raw, ["policy"]);
    try {
      return { policy: checkNetPolicy(a.policy) };
    } catch (e) {
      if (e instanceof NetPolicyError) {
        throw new HelperError("invalid-argument", `nft.apply: ${e.message}`, { cause: e });
      }
      throw e;
    }
  },
  "nft.list": (raw) => (_fields("nft.list", raw, []), {}),
};
