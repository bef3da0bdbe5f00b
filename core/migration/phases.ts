/**
 * The phases of a live migration (seed 001) and the table of legal transitions, labelled by how each is taken:
 * forward (`advance`), `abort` (only before Snapshotting, back to Stable on the source) or `resume-on-source`
 * (the failure path once Snapshotting has begun, where abort is no longer possible).
 *
 * @module
 */

/** The phases, in the order a migration walks them. */
export const PHASES = [
  "Stable",
  "Intent",
  "Draining",
  "Quiescent",
  "Snapshotting",
  "Transferring",
  "Restoring",
  "CutOver",
  "Cleanup",
] as const;

/** One phase of the migration state machine. */
export type Phase = (typeof PHASES)[number];

/** How a transition is taken. */
export type Via = "advance" | "abort" | "resume-on-source";

/** The single forward step from each phase; Cleanup closes the circle back to Stable. */
export interface NextPhase {
  Stable: "Intent";
  Intent: "Draining";
  Draining: "Quiescent";
  Quiescent: "Snapshotting";
  Snapshotting: "Transferring";
  Transferring: "Restoring";
  Restoring: "CutOver";
  CutOver: "Cleanup";
  Cleanup: "Stable";
}

/** Phases from which a migration may be aborted (back to Stable on the source host). */
export type AbortablePhase = "Intent" | "Draining" | "Quiescent";
/** Phases from which a failed migration resumes the VM on the source host; abort is not possible here. */
export type ResumablePhase = "Snapshotting" | "Transferring" | "Restoring";

/** One legal transition. */
export interface TransitionRow {
  readonly from: Phase;
  readonly to: Phase;
  readonly via: Via;
}

const NEXT: Readonly<NextPhase> = {
  Stable: "Intent",
  Intent: "Draining",
  Draining: "Quiescent",
  Quiescent: "Snapshotting",
  Snapshotting: "Transferring",
  Transferring: "Restoring",
  Restoring: "CutOver",
  CutOver: "Cleanup",
  Cleanup: "Stable",
};

/** Abortable phases, at run time. */
export const ABORTABLE: readonly AbortablePhase[] = ["Intent", "Draining", "Quiescent"];
/** Resumable phases, at run time. */
export const RESUMABLE: readonly ResumablePhase[] = ["Snapshotting", "Transferring", "Restoring"];

/** Every legal transition: 9 forward, 3 aborts, 3 resumes on source. Anything else is illegal. */
export const TRANSITIONS: readonly TransitionRow[] = [
  ...PHASES.map((from): TransitionRow => ({ from, to: NEXT[from], via: "advance" })),
  ...ABORTABLE.map((from): TransitionRow => ({ from, to: "Stable", via: "abort" })),
  ...RESUMABLE.map((from): TransitionRow => ({ from, to: "Stable", via: "resume-on-source" })),
];

/** Whether `from → to` taken `via` is in the table. */
export function isLegalTransition(from: Phase, to: Phase, via: Via): boolean {
  return TRANSITIONS.some((t) => t.from === from && t.to === to && t.via === via);
}

/** The number a `/metrics` gauge shows for each phase: its index in {@link PHASES} (Stable = 0). */
export function phaseGauge(phase: Phase): number {
  return PHASES.indexOf(phase);
}
