/**
 * The balloon loop (000 §Memory ballooning): every 30 seconds (the health interval) it reads the host's pressure,
 * reads the balloon of each running, managed guest whose spec asks for one, decides with {@link balloonSteps} and
 * sets the sizes through the guest's runtime ({@link BalloonPort}). Guests on huge pages are never candidates (the
 * caller's {@link BalloonLoopOptions.candidates} leaves them out, and the libvirt host refuses them too). A guest whose
 * runtime answers {@link NoBalloon} is left alone from then on, for as long as it stays a candidate.
 *
 * Nothing here touches admission: a start is still charged each guest's full configured memory
 * (`core/converge/instances/admission.ts`), so ballooning never lets bcd start more guests than fit.
 *
 * A pass whose host readings fail is skipped with a warning; a guest whose reading or resize fails (other than
 * `NoBalloon`) is skipped for that pass. One pass runs at a time: a tick that finds one running is dropped.
 *
 * @module
 */
import { type Clock, repeat, type Timer } from "../clock.ts";
import type { Logger } from "../log/mod.ts";
import { type BalloonDecision, type BalloonGuest, balloonSteps } from "./policy.ts";
import { type BalloonCandidate, type BalloonPort, NoBalloon } from "./port.ts";
import type { MemoryPressureSource } from "./pressure.ts";

/** The health interval the loop runs on. */
export const BALLOON_INTERVAL_MS = 30_000;

/** Options of {@link BalloonLoop}. */
export interface BalloonLoopOptions {
  readonly pressure: MemoryPressureSource;
  /** The guests that may be ballooned now (see {@link BalloonCandidate}). */
  readonly candidates: () => readonly BalloonCandidate[];
  /** The balloon verbs of a runtime by name; `undefined` for a runtime without balloons. */
  readonly port: (runtime: string) => BalloonPort | undefined;
  /** `[instances] balloon_floor_percent` (10 to 100). */
  readonly floorPercent: number;
  readonly clock: Pick<Clock, "setTimer">;
  readonly log: Logger;
  /** Default {@link BALLOON_INTERVAL_MS}. */
  readonly intervalMs?: number;
}

/** What one ballooned guest lends the host: its memory less what the balloon leaves it. */
export interface BalloonReclaim {
  readonly instance: string;
  readonly bytes: number;
}

/** See the module doc. */
export class BalloonLoop {
  readonly #o: BalloonLoopOptions;
  readonly #noBalloon = new Set<string>();
  #reclaimed: BalloonReclaim[] = [];
  #timer: Timer | undefined;
  #running: Promise<BalloonDecision | undefined> | undefined;
  #psiLogged = false;

  constructor(opts: BalloonLoopOptions) {
    if (!(opts.floorPercent >= 10 && opts.floorPercent <= 100)) {
      throw new RangeError(`balloon floor ${opts.floorPercent}% is not 10 to 100`);
    }
    this.#o = opts;
  }

  /** Starts the 30-second passes (the first one interval after the start). */
  start(): void {
    this.#timer ??= repeat(this.#o.clock, this.#o.intervalMs ?? BALLOON_INTERVAL_MS, () => {
      if (this.#running === undefined) void this.pass();
    });
  }

  /** Stops the passes and waits for one in flight. */
  async stop(): Promise<void> {
    this.#timer?.cancel();
    this.#timer = undefined;
    await this.#running;
  }

  /** What each ballooned guest lent the host at the last pass (`bcd.instance.memory.balloon.reclaimed`). */
  reclaimed(): readonly BalloonReclaim[] {
    return this.#reclaimed;
  }

  /** Runs one pass now (the timer's, or a test's); `undefined` when the host readings failed. */
  pass(): Promise<BalloonDecision | undefined> {
    this.#running ??= this.#pass().finally(() => this.#running = undefined);
    return this.#running;
  }

  async #pass(): Promise<BalloonDecision | undefined> {
    const log = this.#o.log;
    const candidates = this.#o.candidates();
    const ids = new Set(candidates.map((c) => c.id));
    for (const id of this.#noBalloon) if (!ids.has(id)) this.#noBalloon.delete(id);
    let host;
    try {
      host = await this.#o.pressure.read();
    } catch (e) {
      log.warn(
        { err: e instanceof Error ? e.message : String(e) },
        "balloon: host memory readings failed; pass skipped",
      );
      return undefined;
    }
    if (host.someAvg10 === null && !this.#psiLogged) {
      this.#psiLogged = true;
      log.info("balloon: this host has no memory PSI; ballooning follows MemAvailable alone");
    }
    const guests: (BalloonGuest & { port: BalloonPort })[] = [];
    for (const c of candidates) {
      const port = this.#o.port(c.runtime);
      if (!port || this.#noBalloon.has(c.id)) continue;
      try {
        const r = await port.readBalloon(c.id);
        guests.push({
          id: c.id,
          memoryBytes: c.memoryBytes,
          currentBytes: r.currentBytes,
          usedBytes: r.usedBytes,
          port,
        });
      } catch (e) {
        this.#failed(c.id, "read", e);
      }
    }
    const decision = balloonSteps(host, guests, this.#o.floorPercent);
    const current = new Map(guests.map((g) => [g.id, g.currentBytes]));
    for (const s of decision.steps) {
      const g = guests.find((x) => x.id === s.id)!;
      try {
        await g.port.setBalloon(s.id, s.toBytes);
        current.set(s.id, s.toBytes);
        log.info(
          { instance: s.id, from_bytes: s.fromBytes, to_bytes: s.toBytes, host_state: decision.state },
          decision.state === "pressure" ? "balloon inflated" : "balloon deflated",
        );
      } catch (e) {
        this.#failed(s.id, "resize", e);
      }
    }
    this.#reclaimed = guests.filter((g) => !this.#noBalloon.has(g.id))
      .map((g) => ({ instance: g.id, bytes: Math.max(0, g.memoryBytes - (current.get(g.id) ?? g.memoryBytes)) }));
    return decision;
  }

  #failed(id: string, what: string, e: unknown): void {
    if (e instanceof NoBalloon) {
      this.#noBalloon.add(id);
      this.#o.log.info({ instance: id, reason: e.reason }, "balloon: the guest has no balloon device; left alone");
      return;
    }
    this.#o.log.warn(
      { instance: id, err: e instanceof Error ? e.message : String(e) },
      `balloon: ${what} failed; skipped this pass`,
    );
  }
}
