/**
 * Live migration, host side (seed 001 §Migration state machine; issue 21): {@link migrate}, the orchestrator over a
 * {@link MigrationHost} and the guest's authenticated turn channels.
 *
 * How it is exposed (issue 21 asks to choose): an `instance.migrate` **command**, not a move of the instances
 * converger. Seed 000's rule decides it: "If losing it leaves the wrong steady state, it is desired state. If running
 * it late could do harm, it is a command with `not_after`". Losing a move leaves the VM running where it is (no wrong
 * steady state), while a move run late, after the rebalancer (seed 001: the machine is "Rebalancer-owned") changed
 * its mind, does harm. Its row (lane `bulk`, no flags) is argued in `core/commands/kinds.ts` (`BCD_KINDS`), its
 * payload and result are `InstanceMigratePayload`/`InstanceMigrateResult` in `proto/bcd/v1/node_ops.proto`, and the
 * node runs it with {@link LibvirtMigrator} (`libvirt_migrator.ts`: the helper's `libvirt.save`/`libvirt.restore`, the
 * phase journal, and the crash recovery that resolves a move in any phase to exactly one running instance).
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
export { LibvirtMigrator, type LibvirtMigratorOptions, recoverMigrations } from "./libvirt_migrator.ts";
export { MigrationPhaseBoard, type MovingInstance } from "./phase_board.ts";
