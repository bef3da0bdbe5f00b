/**
 * What `make bundle` builds, by name: the table every per-executable table of `roles/permissions.ts` and
 * `roles/arg_grants.ts` is keyed by (its own module, so that neither imports the other).
 *
 * @module
 */
import { type Role, ROLES } from "../core/commands/kinds.ts";

/**
 * An executable: the five agent roles, their root helper beside them, and `vm`, the guest agent's host program
 * (neither registers command kinds).
 */
export type Executable = Role | "helper" | "vm";

/** Every executable `make bundle` builds, the roles first. */
export const EXECUTABLES: readonly Executable[] = [...ROLES, "helper", "vm"];
