/**
 * The worker's limits on executions (seed 002 §"The worker's executions").
 *
 * @module
 */

/** `worker::MAX_EXECUTIONS`: executions at once, abandoned ones and uncollected programs included. */
export const MAX_EXECUTIONS = 8;
/** `worker::MAX_EXECUTION_MEMORY`: a runner's buffers (a chunk of each output stream and the input's window). */
export const MAX_EXECUTION_MEMORY = 1024 * 1024;
/** `worker::MAX_HISTORY`: IDs whose latest generation the worker remembers. */
export const MAX_HISTORY = 1024;
/** Queued for the stream beyond this, the executions take no more output. */
export const OUTPUT_QUEUE_LIMIT = 1024 * 1024;
/** Queued beyond this, the worker takes no more host messages. */
export const INPUT_QUEUE_LIMIT = 4 * 1024 * 1024;
/** What one execution may move to the stream in one turn of the loop: an eighth of the output limit. */
export const TURN_BUDGET = OUTPUT_QUEUE_LIMIT / 8;
/** How long a drop waits, in all, for the programs it killed. */
export const DROP_WAIT_MS = 1000;
/** ProbeFailed's problem while executions run: `worker::EXECUTING`. */
export const EXECUTING = "executing: the worker runs no probe while it runs executions";

/** The memory a start asks for: a chunk of each output stream and the input's window. */
export function executionMemory(s: {
  chunk: number;
  stdin: boolean;
  input: { unit: "bytes" | "frames"; size: number };
}): number {
  const input = !s.stdin ? 0 : s.input.unit === "bytes" ? s.input.size : s.input.size * s.chunk;
  return 2 * s.chunk + input;
}
