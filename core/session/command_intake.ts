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
 * Deliveries start together: a taken command waits {@link START_TURNS} promise-job turns (no timer, so a lone
 * command loses nothing measurable) for the frames the session reads right behind it, then every delivery taken
 * meanwhile starts, in the order taken, in one turn. The commands of a burst (a group commit frees several credits
 * at once, and the gateway fills them at once) then go through their checks in step, as they do on the dispatcher's
 * direct path: their signature checks are asked for in the same turn (the Ed25519 thread of `ed25519_thread.ts`, where
 * a caller passes it, takes them as one batch instead of 1.1–1.2 per batch) and their `accepted` join one group
 * commit. Issue 24's figures (`bench:commands-ab`, 40 alternating rounds each, load 3.5–4.6): the session path's
 * event-loop CPU per command 0.95× and wall 0.91× with WebCrypto checks; 0.87–0.90× with the thread.
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

/**
 * Promise-job turns a taken delivery waits for the frames read right behind it (see the module doc): the session
 * client's read, decode and hand-over of the next frame take a few turns each.
 */
export const START_TURNS = 16;

/** Starts command deliveries without waiting for them; see the module doc. */
export class CommandIntake<C> {
  readonly #deliver: (command: C) => Promise<void>;
  readonly #log: Logger;
  readonly #max: number;
  /** Deliveries started and not answered yet. */
  readonly #inFlight = new Set<Promise<void>>();
  /** Commands taken and not started yet, in the order taken. */
  readonly #toStart: C[] = [];
  /** Resolves once the commands of {@link #toStart} have started; undefined while none waits. */
  #starting: Promise<void> | undefined;
  #failed: { readonly error: unknown } | null = null;

  constructor(deliver: (command: C) => Promise<void>, log: Logger, max = MAX_COMMANDS_IN_ACCEPTANCE) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`max must be a positive integer, got ${max}`);
    this.#deliver = deliver;
    this.#log = log;
    this.#max = max;
  }

  /** Deliveries taken and not answered yet (started, or about to start). */
  get inFlight(): number {
    return this.#inFlight.size + this.#toStart.length;
  }

  /**
   * Takes `command` for delivery and resolves once it is queued to start (with the ones taken right behind it, see
   * the module doc), waiting first while `max` deliveries are in acceptance, counting those not started yet. Throws
   * the failure of an earlier delivery, if one failed.
   */
  async take(command: C): Promise<void> {
    this.#rethrow();
    while (this.inFlight >= this.#max) {
      await (this.#starting ?? Promise.race(this.#inFlight));
      this.#rethrow();
    }
    this.#toStart.push(command);
    this.#starting ??= this.#startTogether();
  }

  /**
   * After {@link START_TURNS} promise-job turns, starts every delivery taken meanwhile, in the order taken. One
   * promise per delivery, which forgets it once answered: the intake is on every command's path (issue 24).
   */
  async #startTogether(): Promise<void> {
    for (let i = 0; i < START_TURNS; i++) await null;
    this.#starting = undefined;
    for (const command of this.#toStart.splice(0)) {
      let delivery: Promise<void>;
      try {
        delivery = this.#deliver(command);
      } catch (e) {
        delivery = Promise.reject(e); // a deliver that throws before its first await fails like one that rejects
      }
      const p: Promise<void> = delivery.then(
        () => void this.#inFlight.delete(p),
        (error: unknown) => {
          this.#inFlight.delete(p);
          this.#failed ??= { error };
          this.#log.error(
            { err: error instanceof Error ? error.message : String(error) },
            "delivering a command failed",
          );
        },
      );
      this.#inFlight.add(p);
    }
  }

  /** Resolves once every delivery taken so far is answered; throws the failure of one, if one failed. */
  async settled(): Promise<void> {
    while (this.inFlight > 0) await (this.#starting ?? Promise.all(this.#inFlight));
    this.#rethrow();
  }

  #rethrow(): void {
    const f = this.#failed;
    if (f === null) return;
    this.#failed = null;
    throw f.error;
  }
}
