/**
 * The `access` section at intake (000 §Break-glass SSH and tunnel keys): the CA keys and principals become lines of
 * sshd's files, so anything that could add a line is refused, never stripped. The rules, in the order they are
 * checked, one refusal each:
 *
 * | field         | rule                                                             | reason                |
 * | ------------- | ---------------------------------------------------------------- | --------------------- |
 * | `ssh_ca_keys` | at most {@link MAX_CA_KEYS}                                      | `too-many`            |
 * | `ssh_ca_keys` | no control character                                             | `control-character`   |
 * | `ssh_ca_keys` | exactly one OpenSSH public key of a known type, its blob parsed  | `not-one-key`, `unknown-key-type`, `bad-key-blob` |
 * | `principals`  | at most {@link MAX_PRINCIPALS}, each at most {@link MAX_PRINCIPAL} | `too-many`          |
 * | `principals`  | no control character                                             | `control-character`   |
 * | `principals`  | no whitespace, not empty                                         | `principal-whitespace` |
 * | `revoked_serials` | at most {@link MAX_REVOKED_SERIALS}                          | `too-many`            |
 *
 * Any refusal makes the whole spec invalid, signed or not: it is not applied and the previous spec stays in force.
 * The converger checks again and fails terminally if one slips through.
 *
 * @module
 */
import { CONTROL_CHARACTER, type KeyRefusal, parseSshPublicKey, SshKeyError } from "./ssh_public_key.ts";

/** The most CA keys a section may carry. */
export const MAX_CA_KEYS = 64;
/** The most principals a section may carry. */
export const MAX_PRINCIPALS = 1024;
/** The longest principal. */
export const MAX_PRINCIPAL = 256;
/** The most revoked serials a section may carry (with the other bounds, an `access.apply` request fits the helper's 1 MiB line). */
export const MAX_REVOKED_SERIALS = 20_000;
/** The largest exec-ticket JWKS accepted. */
export const MAX_JWKS_BYTES = 256 * 1024;

/** Why an `access` section is refused. */
export type AccessRefusal = KeyRefusal | "principal-whitespace" | "too-many";

/** An `access` section that makes the whole spec invalid. */
export class AccessSpecInvalid extends Error {
  override name = "AccessSpecInvalid";
  constructor(readonly reason: AccessRefusal, readonly field: string, message: string, options?: ErrorOptions) {
    super(`access.${field}: ${message}`, options);
  }
}

/** The `access` section as the wire decodes it (`bcd.v1.AccessSection`). */
export interface AccessSectionInput {
  readonly exec_ticket_jwks?: string | null;
  readonly ssh_ca_keys?: readonly string[] | null;
  readonly principals?: readonly string[] | null;
  readonly revoked_serials?: readonly number[] | null;
}

function _controlAt(s: string): string | undefined {
  const m = CONTROL_CHARACTER.exec(s);
  return m ? `control character U+${m[0].charCodeAt(0).toString(16).padStart(4, "0")} at ${m.index}` : undefined;
}

/** Checks a section against the rules above; throws {@link AccessSpecInvalid} for the first one broken. */
export function checkAccessSection(s: AccessSectionInput | null | undefined): void {
  if (!s) return;
  const keys = s.ssh_ca_keys ?? [];
  if (keys.length > MAX_CA_KEYS) {
    throw new AccessSpecInvalid("too-many", "ssh_ca_keys", `${keys.length} keys (at most ${MAX_CA_KEYS})`);
  }
  for (const [i, k] of keys.entries()) {
    try {
      parseSshPublicKey(k);
    } catch (e) {
      if (e instanceof SshKeyError) {
        throw new AccessSpecInvalid(e.reason, `ssh_ca_keys[${i}]`, e.message, { cause: e });
      }
      throw e;
    }
  }
  const principals = s.principals ?? [];
  if (principals.length > MAX_PRINCIPALS) {
    throw new AccessSpecInvalid(
      "too-many",
      "principals",
      `${principals.length} principals (at most ${MAX_PRINCIPALS})`,
    );
  }
  for (const [i, p] of principals.entries()) {
    const field = `principals[${i}]`;
    if (p.length > MAX_PRINCIPAL) {
      throw new AccessSpecInvalid("too-many", field, `principal of ${p.length} characters (at most ${MAX_PRINCIPAL})`);
    }
    const cc = _controlAt(p);
    if (cc) throw new AccessSpecInvalid("control-character", field, `principal ${JSON.stringify(p)} holds ${cc}`);
    if (p === "" || /\s/u.test(p)) {
      throw new AccessSpecInvalid(
        "principal-whitespace",
        field,
        `principal ${JSON.stringify(p)} is empty or holds whitespace`,
      );
    }
  }
  const serials = s.revoked_serials ?? [];
  if (serials.length > MAX_REVOKED_SERIALS) {
    throw new AccessSpecInvalid(
      "too-many",
      "revoked_serials",
      `${serials.length} serials (at most ${MAX_REVOKED_SERIALS})`,
    );
  }
}

/** A user account name sshd's `AuthorizedPrincipalsFile /…/%u` may name. */
export const ACCOUNT = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;

/**
 * This node's own principals, by account: a principal `<account>@<node id>` lets a certificate that carries it log
 * in as `<account>` on this node. Principals of other nodes, and ones whose account is not a user name, are left out
 * (they grant nothing here); `skipped` counts them.
 */
export function ownPrincipals(
  principals: readonly string[],
  nodeId: string,
): { readonly byAccount: ReadonlyMap<string, readonly string[]>; readonly skipped: number } {
  const suffix = `@${nodeId}`;
  const by = new Map<string, string[]>();
  let skipped = 0;
  for (const p of principals) {
    const account = p.endsWith(suffix) ? p.slice(0, -suffix.length) : undefined;
    if (account === undefined || !ACCOUNT.test(account)) {
      skipped++;
      continue;
    }
    const list = by.get(account) ?? [];
    if (!list.includes(p)) list.push(p);
    by.set(account, list);
  }
  return { byAccount: new Map([...by].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), skipped };
}
