/**
 * Convergence: NodeSpec sections converged in order by idempotent plan/apply convergers, with per-section status,
 * the `observed_generation` rule, conditions aged on a monotonic clock, and the pass schedule (new spec, drift timer).
 *
 * @module
 */
export { ConditionSet, type ReportedCondition } from "./conditions.ts";
export {
  type ApplyContext,
  type ApplyOutcome,
  ConvergenceEngine,
  type EngineOptions,
  type HeldSpec,
  type SectionConverger,
  type StatusSnapshot,
  TerminalSectionError,
} from "./engine.ts";
export { ConvergeLoop, type ConvergeLoopOptions, DRIFT_INTERVAL_MS, RETRY_INTERVAL_MS } from "./loop.ts";
export {
  isEmptySection,
  isTerminal,
  SECTION_FIELD_NUMBER,
  SECTION_ORDER,
  type SectionName,
  type SectionState,
  type SectionStatus,
} from "./section.ts";
