/**
 * When passes run: on every new spec, on the drift timer (10 minutes), and sooner while a section is
 * `PROGRESSING` (a retryable failure is retried on the next pass). Driven by an injected clock so tests never sleep.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { ConvergenceEngine, HeldSpec, StatusSnapshot } from "./engine.ts";

/** The drift pass interval (000 §Device assignments: "the 10-minute drift pass"). */
export const DRIFT_INTERVAL_MS = 10 * 60_000;
/** How soon a pass with a `PROGRESSING` section is retried. The seed says "the next pass"; bcd retries at 30 s. */
export const RETRY_INTERVAL_MS = 30_000;

/** Options for {@link ConvergeLoop}. */
export interface ConvergeLoopOptions {
  /** The clock the intervals are measured on (its monotonic time: a wall-clock step moves no pass). */
  readonly clock: Pick<Clock, "monotonic">;
  readonly driftMs?: number;
  readonly retryMs?: number;
  /** Called with every pass's status (the session coalesces them latest-wins). */
  readonly onStatus?: (s: StatusSnapshot) => void;
}

/** Schedules the engine's passes. */
export class ConvergeLoop {
  readonly #engine: ConvergenceEngine;
  readonly #opts: ConvergeLoopOptions;
  #lastPassAt = Number.NEGATIVE_INFINITY;

  constructor(engine: ConvergenceEngine, opts: ConvergeLoopOptions) {
    this.#engine = engine;
    this.#opts = opts;
  }

  /** A new spec: hold it and run a pass now. */
  async onSpec(spec: HeldSpec): Promise<StatusSnapshot> {
    this.#engine.hold(spec);
    return await this.#run();
  }

  /** Makes the next timed pass due now (something a pass waits for has come: a secret, a download). */
  expedite(): void {
    this.#lastPassAt = Number.NEGATIVE_INFINITY;
  }

  /** When the next timed pass is due (the clock's monotonic time). */
  nextPassAt(): number {
    const wait = this.#engine.progressing
      ? (this.#opts.retryMs ?? RETRY_INTERVAL_MS)
      : (this.#opts.driftMs ?? DRIFT_INTERVAL_MS);
    return this.#lastPassAt + wait;
  }

  /** Runs a pass when one is due; returns its status, or `undefined` when none was due. */
  async tick(): Promise<StatusSnapshot | undefined> {
    if (this.#engine.spec === undefined || this.#opts.clock.monotonic() < this.nextPassAt()) return undefined;
    return await this.#run();
  }

  async #run(): Promise<StatusSnapshot> {
    this.#lastPassAt = this.#opts.clock.monotonic();
    const s = await this.#engine.pass();
    this.#opts.onStatus?.(s);
    return s;
  }
}
