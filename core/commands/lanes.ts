/**
 * Lanes, credits and workers (000 §Lanes, credits and workers). Each lane has a fixed pool of workers (4 / 2 / 1,
 * started once, never a task per command) and the gateway's credits (8 / 4 / 2) as the bound on the commands
 * admitted at once, running or waiting for a worker. A command holds its credit from acceptance until its result is
 * journaled; the dispatcher reserves and releases it. Commands start in the order they were submitted: one feeder per
 * lane takes the head of the queue, waits for a free worker, then for the command's resource locks, and only then
 * hands it over, so a later command never starts before an earlier one of the same lane.
 *
 * @module
 */
import type { Lane } from "./kinds.ts";
import { AsyncQueue, TakeAborted } from "./async_queue.ts";
import { LockWaitAborted, type ResourceLocks } from "./locks.ts";

/** The seed's lane table. */
export const LANE_LIMITS: Readonly<Record<Lane, { readonly credits: number; readonly workers: number }>> = {
  control: { credits: 8, workers: 4 },
  provision: { credits: 4, workers: 2 },
  bulk: { credits: 2, workers: 1 },
};

/** One command as a lane sees it. */
export interface LaneJob {
  readonly id: string;
  /** Lock keys (see locks.ts), taken before the job starts. */
  readonly resources: readonly string[];
  /** Runs the command with its locks held; must not throw (errors are the command's outcome). */
  run(): Promise<void>;
  /** The job was cancelled before it reached a worker: it never runs. */
  dropped(): Promise<void>;
}

/** The lane stopped; queued jobs are dropped. */
export class LaneStopped extends Error {
  override name = "LaneStopped";
}

/** A lane with its credits, FIFO queue, feeder and fixed worker pool. */
export class LanePool {
  readonly #queue = new AsyncQueue<LaneJob>();
  readonly #idle = new AsyncQueue<true>();
  readonly #handoff = new AsyncQueue<{ job: LaneJob; release: () => void }>();
  readonly #stop = new AbortController();
  #credits: number;
  /** The job the feeder holds while it waits for a worker or its locks, with the controller that aborts the wait. */
  #feeding: { job: LaneJob; abort: AbortController } | undefined;
  readonly #tasks: Promise<void>[] = [];
  #running = 0;

  constructor(
    readonly lane: Lane,
    private readonly locks: ResourceLocks,
    readonly limits: { readonly credits: number; readonly workers: number } = LANE_LIMITS[lane],
  ) {
    this.#credits = limits.credits;
    for (let i = 0; i < limits.workers; i++) this.#idle.put(true);
    this.#tasks.push(this.#feeder());
    for (let i = 0; i < limits.workers; i++) this.#tasks.push(this.#worker());
  }

  /** Credits not held by an admitted command. */
  get freeCredits(): number {
    return this.#credits;
  }

  /** Commands running on a worker now. */
  get running(): number {
    return this.#running;
  }

  /** Takes a credit for a command being admitted; false when none is free (the command is `BUSY`). */
  reserveCredit(): boolean {
    if (this.#credits <= 0) return false;
    this.#credits--;
    return true;
  }

  /** Gives a credit back once the command's result is journaled (or its admission failed). */
  releaseCredit(): void {
    if (this.#credits >= this.limits.credits) throw new RangeError(`lane ${this.lane}: credit released twice`);
    this.#credits++;
  }

  /** Queues an admitted job (it holds a credit). */
  submit(job: LaneJob): void {
    if (this.#stop.signal.aborted) throw new LaneStopped(`lane ${this.lane} is stopped`);
    this.#queue.put(job);
  }

  /**
   * Cancels a job that has not reached a worker: it is taken out of the queue (or out of the feeder's wait) and
   * dropped. Returns false when the job is not waiting here (it reached a worker, or it is unknown).
   */
  cancelQueued(id: string): boolean {
    const queued = this.#queue.remove((j) => j.id === id);
    if (queued !== undefined) {
      void queued.dropped();
      return true;
    }
    if (this.#feeding?.job.id === id) {
      this.#feeding.abort.abort();
      return true;
    }
    return false;
  }

  /** Stops the feeder and workers after the running jobs end; jobs still queued are dropped. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#feeding?.abort.abort();
    const err = new LaneStopped(`lane ${this.lane} stopped`);
    this.#queue.close(err);
    this.#handoff.close(err);
    this.#idle.close(err);
    let j: LaneJob | undefined;
    while ((j = this.#queue.remove(() => true)) !== undefined) await j.dropped();
    await Promise.allSettled(this.#tasks);
  }

  async #feeder(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      let job: LaneJob;
      try {
        // No stop signal here or in the workers' take: stop() closes the queues, which rejects a waiting take with
        // LaneStopped, and a signal would cost an abort listener added and removed on every command.
        job = await this.#queue.take();
      } catch (e) {
        if (e instanceof TakeAborted || e instanceof LaneStopped) return;
        throw e;
      }
      const abort = new AbortController();
      this.#feeding = { job, abort };
      try {
        await this.#idle.take(abort.signal);
      } catch (e) {
        this.#feeding = undefined;
        if (!(e instanceof TakeAborted || e instanceof LaneStopped)) throw e;
        await job.dropped();
        continue;
      }
      let release: () => void;
      try {
        release = this.locks.tryAcquire(job.resources) ?? await this.locks.acquire(job.resources, abort.signal);
      } catch (e) {
        this.#feeding = undefined;
        this.#idle.put(true);
        if (!(e instanceof LockWaitAborted)) throw e;
        await job.dropped();
        continue;
      }
      this.#feeding = undefined;
      this.#handoff.put({ job, release });
    }
  }

  async #worker(): Promise<void> {
    while (true) {
      let item: { job: LaneJob; release: () => void };
      try {
        item = await this.#handoff.take();
      } catch (e) {
        if (e instanceof TakeAborted || e instanceof LaneStopped) return;
        throw e;
      }
      this.#running++;
      try {
        await item.job.run();
      } finally {
        this.#running--;
        item.release();
        this.#idle.put(true);
      }
    }
  }
}
