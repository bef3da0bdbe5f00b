/**
 * The live-migration state machine of seed 001: `Stable → Intent → Draining → Quiescent → Snapshotting →
 * Transferring → Restoring → CutOver → Cleanup → Stable`, abort only before Snapshotting, resume-on-source after.
 * Illegal transitions fail to type-check; every transition emits a structured JSON event.
 *
 * @module
 */
export { type FsmRefusalReason, MigrationTransitionError } from "./errors.ts";
export { formatMigrationEvent, type MigrationEvent } from "./events.ts";
export {
  ABORTABLE,
  type AbortablePhase,
  isLegalTransition,
  type NextPhase,
  type Phase,
  phaseGauge,
  PHASES,
  RESUMABLE,
  type ResumablePhase,
  type TransitionRow,
  TRANSITIONS,
  type Via,
} from "./phases.ts";
export {
  type AnyMigrationState,
  Cleanup,
  CutOver,
  Draining,
  Intent,
  type MigrationFsmOptions,
  MigrationState,
  Quiescent,
  Restoring,
  Snapshotting,
  Stable,
  startMigrationFsm,
  type StateOf,
  Transferring,
} from "./typestate.ts";
