/**
 * What the `access` section becomes on disk, rendered the same way by the node (to plan) and by the root helper (to
 * write): the CA keys file (`TrustedUserCAKeys`), one principals file per account (`AuthorizedPrincipalsFile …/%u`),
 * and the input of the KRL (`RevokedKeys`), which `ssh-keygen -k` turns into the binary KRL. The KRL itself is not
 * byte-stable (it carries its build time), so its input is kept beside it and compared instead.
 *
 * A section with no CA key trusts nothing: its files are all absent, whatever its principals and serials say.
 *
 * @module
 */
import { type AccessSectionInput, ACCOUNT, MAX_PRINCIPAL, ownPrincipals } from "./section.ts";
import { CONTROL_CHARACTER, parseSshPublicKey } from "./ssh_public_key.ts";

/** The files' content, as the node sends it to the helper (`access.apply`). */
export interface AccessFiles {
  /** CA key lines, each `<type> <base64>` (comments dropped). */
  readonly caKeys: readonly string[];
  /** This node's principals, one entry per account, sorted by account. */
  readonly principals: readonly { readonly account: string; readonly principals: readonly string[] }[];
  /** Revoked serials, sorted, without duplicates, each at least 1. */
  readonly revokedSerials: readonly number[];
}

/** What the helper finds on disk (`access.observe`). */
export interface AccessObserved {
  /** The CA keys file's text, `null` when absent. */
  readonly caKeys: string | null;
  /** Each principals file's text, by account. */
  readonly principals: Readonly<Record<string, string>>;
  /** The KRL input kept beside the KRL, `null` when either is absent. */
  readonly krlInput: string | null;
  /** The drop-in: the one the helper writes, absent, or something else. */
  readonly dropIn: "current" | "absent" | "other";
}

/** No trust: every file absent. */
export const NO_ACCESS_FILES: AccessFiles = { caKeys: [], principals: [], revokedSerials: [] };

/** Whether `f` trusts nothing (its files are all removed). */
export function isNoAccess(f: AccessFiles): boolean {
  return f.caKeys.length === 0;
}

/** The files of a checked section for node `nodeId`; `skipped` counts principals that are not this node's. */
export function accessFilesOf(
  s: AccessSectionInput | undefined,
  nodeId: string,
): { readonly files: AccessFiles; readonly skipped: number } {
  const keys = (s?.ssh_ca_keys ?? []).map((k) => {
    const p = parseSshPublicKey(k);
    return `${p.type} ${p.base64}`;
  });
  if (keys.length === 0) return { files: NO_ACCESS_FILES, skipped: 0 };
  const own = ownPrincipals(s?.principals ?? [], nodeId);
  const serials = [...new Set(s?.revoked_serials ?? [])].sort((a, b) => a - b);
  return {
    files: {
      caKeys: [...new Set(keys)],
      principals: [...own.byAccount].map(([account, principals]) => ({ account, principals })),
      revokedSerials: serials,
    },
    skipped: own.skipped,
  };
}

/** `TrustedUserCAKeys`: one key per line. */
export function renderCaKeys(f: AccessFiles): string {
  return f.caKeys.map((k) => `${k}\n`).join("");
}

/** One account's `AuthorizedPrincipalsFile`: one principal per line. */
export function renderPrincipals(principals: readonly string[]): string {
  return principals.map((p) => `${p}\n`).join("");
}

/**
 * The KRL's input, an `ssh-keygen -k` spec: the CA keys as comments (the serials are revoked under each of them, one
 * `ssh-keygen -k -s <ca>` run per key) and one `serial:` line per serial.
 */
export function renderKrlInput(f: AccessFiles): string {
  return [
    "# bcd: serials revoked under each CA key below",
    ...f.caKeys.map((k) => `# ca: ${k}`),
    ...f.revokedSerials.map((s) => `serial: ${s}`),
  ].map((l) => `${l}\n`).join("");
}

/** Where the helper keeps the files (from its config). */
export interface AccessPaths {
  readonly caKeys: string;
  /** The principals directory; sshd reads `<dir>/%u`. */
  readonly principalsDir: string;
  readonly krl: string;
}

/** The `sshd_config.d` drop-in that points sshd at the files. */
export function renderDropIn(p: AccessPaths): string {
  return [
    "# Written by bcd-helper from the access section; edits are overwritten.",
    `TrustedUserCAKeys ${p.caKeys}`,
    `AuthorizedPrincipalsFile ${p.principalsDir}/%u`,
    `RevokedKeys ${p.krl}`,
    "",
  ].join("\n");
}

/** Whether what is on disk is `want` (the plan's test; the KRL by its input). */
export function accessFilesMatch(want: AccessFiles, seen: AccessObserved): boolean {
  if (isNoAccess(want)) {
    return seen.caKeys === null && Object.keys(seen.principals).length === 0 && seen.krlInput === null &&
      seen.dropIn === "absent";
  }
  if (seen.dropIn !== "current" || seen.caKeys !== renderCaKeys(want) || seen.krlInput !== renderKrlInput(want)) {
    return false;
  }
  const accounts = Object.keys(seen.principals);
  if (accounts.length !== want.principals.length) return false;
  return want.principals.every((p) => seen.principals[p.account] === renderPrincipals(p.principals));
}

/** Checks `f` as the helper receives it: the rules of the section, plus canonical form. Throws `RangeError`. */
export function checkAccessFiles(f: AccessFiles): void {
  for (const k of f.caKeys) {
    const p = parseSshPublicKey(k);
    if (`${p.type} ${p.base64}` !== k) {
      throw new RangeError(`CA key ${JSON.stringify(k.slice(0, 60))} is not "<type> <base64>"`);
    }
  }
  let last = "";
  for (const { account, principals } of f.principals) {
    if (!ACCOUNT.test(account) || account <= last) {
      throw new RangeError(`account ${JSON.stringify(account)} is not a user name in sorted order`);
    }
    last = account;
    for (const p of principals) {
      if (!p.startsWith(`${account}@`) || p.length > MAX_PRINCIPAL || /\s/u.test(p) || CONTROL_CHARACTER.test(p)) {
        throw new RangeError(`principal ${JSON.stringify(p)} is not ${account}@<node> on one line`);
      }
    }
  }
  let prev = 0;
  for (const s of f.revokedSerials) {
    if (!Number.isSafeInteger(s) || s <= prev) {
      throw new RangeError(`revoked serial ${s} is not an integer above ${prev} (sorted, at least 1)`);
    }
    prev = s;
  }
}
