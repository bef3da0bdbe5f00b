/**
 * Break-glass SSH and exec tunnels (000 §Break-glass SSH and tunnel keys): what the `access` section may hold and
 * what it becomes.
 *
 * - {@link ./ssh_public_key.ts}: one OpenSSH public key line, parsed down to its blob (type, lengths, known
 *   algorithms); {@link ./section.ts}: the intake rules that make a whole spec invalid, and this node's principals.
 * - {@link ./files.ts}: the files sshd reads (CA keys, principals per account, the KRL's input, the drop-in), rendered
 *   the same way by the node (to plan) and by the root helper (to write).
 * - {@link ./converger.ts}: the section's converger over an {@link AccessHost} (the helper's `access.*` ops on a
 *   node; {@link FakeAccessHost} in tests) and a {@link JwksHolder} the tunnel code verifies tickets against.
 *
 * Judgement calls the seed left open, written down:
 * - "this node's own principals (`@` only)" is read as `<account>@<node id>`: such a principal is written to the
 *   principals file of `<account>` (`AuthorizedPrincipalsFile <dir>/%u`), so a certificate carrying it logs in as
 *   that account on this node only. Other nodes' principals are left out, not refused.
 * - A section without a CA key trusts nothing: every file goes, as for an empty section.
 * - The drop-in names fixed paths, so it changes (and sshd reloads) only when access is first granted or removed
 *   entirely; sshd reads the CA keys, principals and KRL at each login, so their changes need no reload.
 * - Revoked serials apply under every CA key (one `ssh-keygen -k -s <ca>` run per key); serial 0, which a KRL cannot
 *   hold, fails the section terminally rather than being dropped.
 *
 * @example
 * ```ts
 * import { AccessConverger, FakeAccessHost } from "./mod.ts";
 * const conv = new AccessConverger({ host: new FakeAccessHost(), nodeId: "n1" });
 * ```
 *
 * @module
 */
export { type AccessAction, AccessConverger, type AccessConvergerOptions } from "./converger.ts";
export { FakeAccessHost } from "./fake_host.ts";
export {
  type AccessFiles,
  accessFilesMatch,
  accessFilesOf,
  type AccessObserved,
  type AccessPaths,
  checkAccessFiles,
  isNoAccess,
  NO_ACCESS_FILES,
  renderCaKeys,
  renderDropIn,
  renderKrlInput,
  renderPrincipals,
} from "./files.ts";
export { JwksHolder, JwksInvalid, MAX_JWKS_KEYS, parseJwks, type TicketAlg, type TicketKey } from "./jwks.ts";
export type { AccessApplied, AccessHost } from "./ports.ts";
export {
  type AccessRefusal,
  type AccessSectionInput,
  AccessSpecInvalid,
  ACCOUNT,
  checkAccessSection,
  MAX_CA_KEYS,
  MAX_PRINCIPAL,
  MAX_PRINCIPALS,
  MAX_REVOKED_SERIALS,
  ownPrincipals,
} from "./section.ts";
export { type KeyRefusal, parseSshPublicKey, SSH_KEY_TYPES, SshKeyError, type SshPublicKey } from "./ssh_public_key.ts";
