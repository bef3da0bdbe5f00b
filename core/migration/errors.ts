/**
 * Run-time refusals of the migration state machine. The type system refuses illegal transitions at compile time;
 * these catch what types cannot: a state object used after it was left, or a cast that smuggled a wrong phase.
 *
 * @module
 */
import type { Phase, Via } from "./phases.ts";

/** Why a transition was refused at run time. */
export type FsmRefusalReason = "stale-state" | "illegal-transition";

/** A transition refused at run time. */
export class MigrationTransitionError extends Error {
  override name = "MigrationTransitionError";
  constructor(
    readonly reason: FsmRefusalReason,
    readonly from: Phase,
    readonly to: Phase,
    readonly via: Via,
    message: string,
  ) {
    super(`${reason}: ${message}`);
  }
}
