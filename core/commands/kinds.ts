/**
 * The command kinds bcd registers: exactly the seed's "Kinds by lane" table (000 §Commands), with the built-in
 * timeouts of §Timeouts carried as metadata, plus bcd's own kinds ({@link BCD_KINDS}), each with the reason for its
 * row. A kind outside an agent's role is `UNSUPPORTED`.
 *
 * @module
 */

/** The three command lanes. */
export type Lane = "control" | "provision" | "bulk";

/** The agent roles that register command kinds (the guest and sim roles: see {@link kindsForRole}). */
export type KindRole = "node" | "site" | "ramdisk";

/** A role executable. `sim` is the node role on simulated hardware; `guest` registers no command kinds. */
export type Role = "node" | "site" | "ramdisk" | "guest" | "sim";

/** Every role executable, in the order the docs list them. */
export const ROLES: readonly Role[] = ["node", "site", "ramdisk", "guest", "sim"];

/** The flags a kind carries. */
export interface KindFlags {
  /** May run again when a crash interrupted it before it finished. */
  readonly retrySafe: boolean;
  /** The result must be node-signed. */
  readonly attested: boolean;
  /** Subject to the destructive-batch quorum. */
  readonly destructive: boolean;
  /** The side effect ends the daemon process. */
  readonly selfTerminating: boolean;
}

/** One row of the kinds table. */
export interface KindSpec extends KindFlags {
  readonly kind: string;
  /** The flags as the seed's table spells them, in its order. */
  readonly flags: readonly FlagName[];
  readonly lane: Lane;
  readonly roles: readonly KindRole[];
  /** The sweeper's timeout past `not_after` (000 §Timeouts), in milliseconds. */
  readonly timeoutMs: number;
}

const MIN = 60_000;
const HOUR = 60 * MIN;

/** The timeout an unregistered kind gets. */
export const DEFAULT_KIND_TIMEOUT_MS = 15 * MIN;

/** A flag as the seed spells it. */
export type FlagName = "retry-safe" | "attested" | "destructive" | "self-terminating";

function row(
  lane: Lane,
  kind: string,
  roles: readonly KindRole[],
  flags: readonly FlagName[],
  timeoutMs: number,
): KindSpec {
  return {
    kind,
    lane,
    roles,
    flags,
    retrySafe: flags.includes("retry-safe"),
    attested: flags.includes("attested"),
    destructive: flags.includes("destructive"),
    selfTerminating: flags.includes("self-terminating"),
    timeoutMs,
  };
}

/** The seed's table, row by row (rows naming several kinds are expanded). */
export const SEED_KINDS: readonly KindSpec[] = [
  row("control", "inventory.refresh", ["node", "site", "ramdisk"], ["retry-safe"], 2 * MIN),
  row("control", "diag.nvml", ["node", "ramdisk"], ["retry-safe", "attested"], 2 * MIN),
  row("control", "gpu.reset", ["node"], ["attested", "destructive"], 5 * MIN),
  row("control", "node.reboot", ["node", "site"], ["retry-safe", "self-terminating", "destructive"], 15 * MIN),
  row("control", "bmc.query", ["site"], ["retry-safe"], 2 * MIN),
  row("control", "bmc.boot", ["site"], ["retry-safe", "destructive"], 2 * MIN),
  row("control", "bmc.power", ["site"], ["destructive"], 5 * MIN),
  row("control", "bmc.firmware", ["site"], ["destructive"], HOUR),
  row("control", "bmc.storage", ["site"], ["destructive"], HOUR),
  row("control", "bmc.rotate", ["site"], ["attested", "destructive"], 5 * MIN),
  row("control", "site.httpProxy", ["site"], ["destructive"], MIN),
  row("control", "boot.prepareRamdisk", ["site"], ["retry-safe"], 2 * MIN),
  row("control", "boot.cleanUp", ["site"], ["retry-safe"], 2 * MIN),
  row("control", "boot.kexec", ["ramdisk"], ["self-terminating"], 15 * MIN),
  row("provision", "disk.wipe", ["ramdisk"], ["attested", "destructive"], 6 * HOUR),
  row("provision", "deploy.image", ["ramdisk"], ["destructive"], HOUR),
  row("provision", "diag.dcgm", ["ramdisk", "node"], ["retry-safe", "attested"], HOUR),
  row("provision", "driver.invoke", ["node", "site", "ramdisk"], ["destructive"], DEFAULT_KIND_TIMEOUT_MS),
  row("bulk", "logs.collect", ["node", "site", "ramdisk"], ["retry-safe"], 15 * MIN),
  row("bulk", "instance.snapshot", ["node"], [], DEFAULT_KIND_TIMEOUT_MS),
];

/**
 * bcd's kinds beyond the seed's table (the seed has no row for them), each row argued:
 *
 * - `instance.migrate` (issue 21; seed 001 §Migration state machine): a command, not a move of the instances
 *   converger, by seed 000's rule (losing it leaves no wrong steady state; running it late, after the rebalancer
 *   changed its mind, does harm). Lane `bulk`: a memory snapshot is the largest transfer a node makes, beside
 *   `instance.snapshot`, and the lane's one worker keeps two moves from running at once. No flags: not `retry-safe` (a
 *   move a crash interrupted must not start over; the journal settles it `FAILED interrupted` and the node's recovery
 *   leaves exactly one running instance, `runtimes/migration/`), not `destructive` (the VM keeps running and its disk
 *   is untouched, so no quorum), not `attested`, not `self-terminating`. The timeout is the one an unregistered kind
 *   gets (15 minutes), since the seed's sweeper knows no row for it.
 * - `daemon.upgrade` (issue 16): the seed names it (the one kind an upgrade-only session accepts) but gives it no row.
 *   Lane `bulk`: it moves a release artifact of tens of MB and must not hold a `control` worker that resets and
 *   reboots wait for. Roles `node` and `site`, the agents that converge the `daemon` section. `retry-safe`: a second
 *   run finds the version running, or the helper's record of its rollback, and settles without acting again.
 *   `self-terminating`: the helper restarts the agent on the new release, so the dispatcher journals `running` before
 *   the swap and the new process answers the redelivered command. Not `destructive`: it changes no tenant state; its
 *   guard is the release signature, not the quorum. 30 minutes.
 */
export const BCD_KINDS: readonly KindSpec[] = [
  row("bulk", "instance.migrate", ["node"], [], DEFAULT_KIND_TIMEOUT_MS),
  row("bulk", "daemon.upgrade", ["node", "site"], ["retry-safe", "self-terminating"], 30 * MIN),
];

/** Every kind bcd registers: the seed's table, then bcd's own. */
export const KINDS: readonly KindSpec[] = [...SEED_KINDS, ...BCD_KINDS];

const BY_KIND: ReadonlyMap<string, KindSpec> = new Map(KINDS.map((k) => [k.kind, k]));

/** The row for `kind`, or `undefined` when bcd does not register it. */
export function lookupKind(kind: string): KindSpec | undefined {
  return BY_KIND.get(kind);
}

/** The role whose kinds a role executable registers: `sim` is the node role, `guest` has none. */
export function kindRoleOf(role: Role): KindRole | undefined {
  if (role === "sim") return "node";
  if (role === "guest") return undefined;
  return role;
}

/** The kinds a role registers, in table order. */
export function kindsForRole(role: Role): KindSpec[] {
  const r = kindRoleOf(role);
  return r === undefined ? [] : KINDS.filter((k) => k.roles.includes(r));
}
