/**
 * The moves in progress on this node, for the `bcd.instance.migration.phase` gauge (`core/telemetry/metrics.ts`):
 * {@link LibvirtMigrator}'s `onPhase` records each phase as the move enters it, and a move that is back at `Stable`
 * (done, aborted or resumed on the source) leaves the board, so the gauge lists exactly the instances moving now.
 *
 * @module
 */
import type { Phase } from "../../core/migration/mod.ts";

/** One move in progress. */
export interface MovingInstance {
  readonly instance: string;
  readonly phase: Phase;
  /** `phaseGauge(phase)`: the phase's index in `PHASES`. */
  readonly gauge: number;
}

/** The moves in progress, by instance. */
export class MigrationPhaseBoard {
  readonly #moves = new Map<string, MovingInstance>();

  /** `onPhase` of the migrator: a move entered `phase`. */
  record(instance: string, phase: Phase, gauge: number): void {
    if (phase === "Stable") this.#moves.delete(instance);
    else this.#moves.set(instance, { instance, phase, gauge });
  }

  /** The moves in progress now, by instance id. */
  moving(): readonly MovingInstance[] {
    return [...this.#moves.values()].sort((a, b) => a.instance < b.instance ? -1 : a.instance > b.instance ? 1 : 0);
  }
}
