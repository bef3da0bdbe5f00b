/**
 * Live migration, host side (seed 001 §Migration state machine; issue 21): {@link migrate}, the orchestrator over a
 * {@link MigrationHost} and the guest's authenticated turn channels.
 *
 * How it is exposed (issue 21 asks to choose): an `instance.migrate` **command**, not a move of the instances
 * converger. Seed 000's rule decides it: "If losing it leaves the wrong steady state, it is desired state. If running
 * it late could do harm, it is a command with `not_after`". Losing a move leaves the VM running where it is (no wrong
 * steady state), while a move run late, after the rebalancer (seed 001: the machine is "Rebalancer-owned") changed
 * its mind, does harm. Its row, when it is registered: lane `bulk` (a memory snapshot is the largest transfer a node
 * makes; the lane's single worker also keeps two moves from running at once), flags none: not `retry-safe` (a move a
 * crash interrupted must not start over; the journal settles it `FAILED interrupted` and the node resumes the VM on
 * the source from the snapshot directory it finds), not `destructive` (the VM keeps running and its disk is
 * untouched, so no quorum), not `attested`, not `self-terminating`. Not registered yet: the kinds table must equal the
 * seed's word for word (`core/commands/kinds_test.ts`) and a wire kind needs its payload message in `proto/`; the
 * snapshot and restore must also go through the helper's `libvirt.save`/`libvirt.restore` ops (issue 12).
 *
 * @module
 */
export {
  type GuestChannels,
  migrate,
  type MigrateOptions,
  type MigrationHost,
  type MigrationOutcome,
  type MigrationResult,
  type MigrationStep,
} from "./orchestrator.ts";
