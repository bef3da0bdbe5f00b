/**
 * Command frames taken off the session while the ones before them are still in acceptance (issue 24).
 *
 * The session reads one frame at a time and waits for each frame's handling before the next. A command's delivery
 * resolves only once its `accepted` is durable (a group commit and its WAL sync), so waiting for it before reading
 * the next `Command` made every command of a burst wait for the sync of the one before: each `accepted` had a sync of
 * its own, and group commit across the commands in flight, which the dispatcher is built for, never happened on the
 * session's path. The intake starts each delivery and lets the session read on at once; the dispatcher keeps the
 * delivery order (credits and lanes are taken in the order `deliver` was called) and re-attaches a duplicate.
 *
 * Every other frame still sees the commands before it answered: the session calls {@link CommandIntake.settled}
 * first (a `DesiredState` right behind a `Command` whose `min_generation` it satisfies must find that command
 * deferred, not still in its checks; a `Cancel`, an `Ack` or a heartbeat keep the order they had).
 *
 * Bounds and failures: at most `max` deliveries are in acceptance at once; the next `Command` waits for the oldest
 * to be answered (the session stops reading meanwhile). A delivery that fails (only the journal can: a stopped
 * journal ends the daemon through its `onStop`) is logged at once and thrown again from the next {@link take} or
 * {@link settled}, so the session ends on it as it did when it waited for each delivery.
 *
 * @module
 */
import type { Logger } from "../log/mod.ts";

/** Deliveries in acceptance at once: above the lanes' credits together (8 + 4 + 2), so a burst meets `BUSY` first. */
export const MAX_COMMANDS_IN_ACCEPTANCE = 32;

/** Starts command deliveries without waiting for them; see the module doc. */
export class CommandIntake<C> {
  readonly #deliver: (command: C) => Promise<void>;
  readonly #log: Logger;
  readonly #max: number;
  readonly #inFlight = new Set<Promise<void>>();
  #failed: { readonly error: unknown } | null = null;

  constructor(deliver: (command: C) => Promise<void>, log: Logger, max = MAX_COMMANDS_IN_ACCEPTANCE) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`);
    this.#deliver = deliver;
    this.#log = log;
    this.#max = max;
  }

  /** Deliveries started and not answered yet. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Starts delivering `command` and resolves once it is under way, waiting first while `max` deliveries are in
   * acceptance. Throws the failure of an earlier delivery, if one failed.
   */
  async take(command: C): Promise<void> {
    this.#rethrow();
    while (this.#inFlight.size >= this.#max) {
      await Promise.race(this.#inFlight);
      this.#rethrow();
    }
    const p: Promise<void> = this.#deliver(command).then(
      () => {},
      (error: unknown) => {
        this.#failed ??= { error };
        this.#log.error({ err: error instanceof Error ? error.message : String(error) }, "delivering a command failed");
      },
    ).finally(() => this.#inFlight.delete(p));
    this.#inFlight.add(p);
  }

  /** Resolves once every delivery started so far is answered; throws the failure of one, if one failed. */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
    this.#rethrow();
  }

  #rethrow(): void {
    const f = this.#failed;
    if (f === null) return;
    this.#failed = null;
    throw f.error;
  }
}
