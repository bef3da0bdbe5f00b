/**
 * Reserved targets (seed 002 §Probes, worker::mapping): paths beneath the root that a mapping may neither land
 * on, nor hide by landing on an ancestor, nor reach below. The seed's "tree" (such as /srv/adapter) and "path"
 * (such as /srv/checks/exact) refuse alike: a target below a reserved path would make that path a directory,
 * which the runtime's bind of a file there could no longer use, so the mapping scenario refuses it too.
 *
 * @module
 */

/** A set of reserved absolute paths in the root. */
export type ReservedSet = readonly string[];

/** The runtime's: the time status that the guest's time daemon publishes. */
export const RUNTIME_RESERVED: ReservedSet = ["/run/nvx/time"];

/** The guest agent's copy of itself at the top of the root (`/.runtime-adapter-guest`). */
export const AGENT_PATH = "/.runtime-adapter-guest";

/** The container root's (`Root::map` checks against it): its kernel file systems, the agent, the machine ID. */
export const CONTAINER_ROOT_RESERVED: ReservedSet = [
  "/proc",
  "/sys",
  "/dev",
  AGENT_PATH,
  "/etc/machine-id",
  ...RUNTIME_RESERVED,
];

/** The reserved path that `target` lands on, hides, or lies below, or null. */
export function reservedConflict(set: ReservedSet, target: string): string | null {
  for (const r of set) {
    if (target === r || r.startsWith(`${target}/`) || target.startsWith(`${r}/`)) return r;
  }
  return null;
}
