/**
 * A root profile's entry (seed 002 §Root-profile entries, the entry's checks): the identity an execution enters the
 * root with, the capability allowlist, and the entry's refusals — checked before anything is spawned. The spawn
 * itself (new mount, PID and UTS namespaces, the root moved over `/`, the identity) is `entry_scripts.ts`.
 *
 * The allowlist is bcd's reading of the seed, which names no list but says the entry refuses "the 51 capabilities
 * outside its allowlist": a capability is one of the 64 bits of the kernel's capability sets, so the allowlist holds
 * 13 — the container runtimes' customary default set without `CAP_AUDIT_WRITE` (the guest has no audit daemon).
 *
 * @module
 */

/** The kernel's capability names by number (`CAP_CHOWN` = 0 … `CAP_CHECKPOINT_RESTORE` = 40), lowercase, no prefix. */
export const CAPABILITY_NAMES: readonly string[] = [
  "chown",
  "dac_override",
  "dac_read_search",
  "fowner",
  "fsetid",
  "kill",
  "setgid",
  "setuid",
  "setpcap",
  "linux_immutable",
  "net_bind_service",
  "net_broadcast",
  "net_admin",
  "net_raw",
  "ipc_lock",
  "ipc_owner",
  "sys_module",
  "sys_rawio",
  "sys_chroot",
  "sys_ptrace",
  "sys_pacct",
  "sys_admin",
  "sys_boot",
  "sys_nice",
  "sys_resource",
  "sys_time",
  "sys_tty_config",
  "mknod",
  "lease",
  "audit_write",
  "audit_control",
  "setfcap",
  "mac_override",
  "mac_admin",
  "syslog",
  "wake_alarm",
  "block_suspend",
  "audit_read",
  "perfmon",
  "bpf",
  "checkpoint_restore",
];

/** The bits of a capability set. */
export const CAPABILITY_BITS = 64;

/** A capability's name: the kernel's, or `cap_N` for a bit the kernel names none for. */
export function capabilityName(bit: number): string {
  return CAPABILITY_NAMES[bit] ?? `cap_${bit}`;
}

/** The entry's allowlist, in bit order. */
export const ALLOWED_CAPABILITIES: readonly string[] = [
  "chown",
  "dac_override",
  "fowner",
  "fsetid",
  "kill",
  "setgid",
  "setuid",
  "setpcap",
  "net_bind_service",
  "net_raw",
  "sys_chroot",
  "mknod",
  "setfcap",
];

/** What published listeners take away: a privileged source port and raw sockets could forge an announcement. */
export const PUBLISHED_REFUSED: readonly string[] = ["net_bind_service", "net_raw"];

/** How the entry reads an identity: any numbers, or only those with an account in the root. */
export type AccountMode = "numeric" | "existing";

/** The identity an execution enters the root with. */
export interface EntryIdentity {
  readonly uid: number;
  readonly gid: number;
  /** The capabilities it holds (names as {@link capabilityName} gives them). */
  readonly capabilities: readonly string[];
  /** Whether the sandbox publishes listeners (either publication mode: the entry treats them alike). */
  readonly published: boolean;
  readonly accounts: AccountMode;
}

/** The entry refused an identity, before anything ran; `message` is the reason. */
export class EntryRefused extends Error {
  override name = "EntryRefused";
}

/**
 * Checks `id` (`hasAccount`: whether the root holds an account for a user ID). Throws {@link EntryRefused}:
 * `capability NAME is outside the allowlist`, `capability NAME is refused while listeners are published`,
 * `capabilities for user ID N: only user ID 0 holds capabilities`, `user ID N has no account in the root
 * (existing-account mode)`.
 */
export function checkEntry(id: EntryIdentity, hasAccount: (uid: number) => boolean): void {
  if (!Number.isSafeInteger(id.uid) || id.uid < 0 || id.uid > 0xfffffffe) {
    throw new EntryRefused(`user ID ${id.uid} is not a user ID`);
  }
  if (!Number.isSafeInteger(id.gid) || id.gid < 0 || id.gid > 0xfffffffe) {
    throw new EntryRefused(`group ID ${id.gid} is not a group ID`);
  }
  for (const c of id.capabilities) {
    if (!ALLOWED_CAPABILITIES.includes(c)) throw new EntryRefused(`capability ${c} is outside the allowlist`);
    if (id.published && PUBLISHED_REFUSED.includes(c)) {
      throw new EntryRefused(`capability ${c} is refused while listeners are published`);
    }
  }
  if (id.uid !== 0 && id.capabilities.length > 0) {
    throw new EntryRefused(`capabilities for user ID ${id.uid}: only user ID 0 holds capabilities`);
  }
  if (id.accounts === "existing" && !hasAccount(id.uid)) {
    throw new EntryRefused(`user ID ${id.uid} has no account in the root (existing-account mode)`);
  }
}

/** The user IDs of a passwd file's accounts. */
export function passwdUids(text: string): Set<number> {
  const out = new Set<number>();
  for (const line of text.split("\n")) {
    const f = line.split(":");
    if (f.length >= 7 && /^\d+$/.test(f[2]!)) out.add(Number(f[2]));
  }
  return out;
}

/**
 * util-linux `setpriv`'s arguments for a checked identity: the bounding set cut to its capabilities (user ID 0
 * regains exactly those at its exec), no inheritable or ambient capability, no new privileges, its user and group
 * IDs and no supplementary group.
 */
export function setprivArgs(id: EntryIdentity): string[] {
  return [
    `--bounding-set=-all${id.capabilities.map((c) => `,+${c}`).join("")}`,
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--no-new-privs",
    `--reuid=${id.uid}`,
    `--regid=${id.gid}`,
    "--clear-groups",
  ];
}
