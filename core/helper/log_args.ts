/**
 * What the helper's log line of an op carries for its arguments: the arguments themselves, except for `nft.apply`,
 * whose policy can run to hundreds of kilobytes (1,000 instances with two NICs is about 350 KB): its log line names
 * the NIC and instance counts and the SHA-256 of the policy's JSON instead, so the same policy logs the same digest;
 * and `access.apply`, whose files can hold 20,000 revoked serials: its line names the counts and the SHA-256 of the
 * files' JSON; and `kube.join`, whose bootstrap token is never logged: its line carries the join's settings with the
 * token replaced by `"<redacted>"`.
 *
 * @module
 */
import { sha256HexSync } from "../util/sha256.ts";
import type { HelperRequest } from "./protocol.ts";

/** The arguments of `req` as the helper logs them. */
export function loggedArgs(req: HelperRequest): unknown {
  if (req.op === "access.apply") {
    const f = req.args;
    return {
      caKeys: f.caKeys.length,
      accounts: f.principals.length,
      principals: f.principals.reduce((n, p) => n + p.principals.length, 0),
      revokedSerials: f.revokedSerials.length,
      sha256: sha256HexSync(JSON.stringify(f)),
    };
  }
  if (req.op === "kube.join") return { ...req.args, token: "<redacted>" };
  if (req.op !== "nft.apply") return req.args;
  const nics = req.args.policy.nics;
  return {
    nics: nics.length,
    instances: new Set(nics.map((n) => n.instance)).size,
    sha256: sha256HexSync(JSON.stringify(req.args.policy)),
  };
}
