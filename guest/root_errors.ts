/**
 * How the root operations fail, each answered by the worker with its own frame: {@link StageFailed} (RootFailed),
 * {@link ProbeProblem} (ProbeFailed), {@link MappingFailed} (MapFailed). A file of its own, below `root_ops.ts` and
 * `root_layout.ts`, so that neither imports the other.
 *
 * @module
 */
import type { RootStage } from "../core/framing/mod.ts";

/** A stage of the root failed; the worker answers RootFailed with the stage and ends with its status. */
export class StageFailed extends Error {
  override name = "StageFailed";
  constructor(readonly stage: RootStage, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A probe that the worker does not know, or that failed: ProbeFailed with the problem. */
export class ProbeProblem extends Error {
  override name = "ProbeProblem";
}

/** A mapping that failed to apply: MapFailed with the count applied. */
export class MappingFailed extends Error {
  override name = "MappingFailed";
}
