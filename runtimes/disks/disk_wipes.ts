/**
 * Root's wipes (`disk.wipe`, `disk.wipe_status`, `disk.wipe_cancel`): each asks {@link DiskGuard} again for the disk by
 * its stable id, opens it, runs `wipeDisk` and answers the outcome or the refusal as data, so the agent branches on a
 * reason, not on words. One wipe per disk at a time (a second is `busy`); the running one's progress is kept for
 * `disk.wipe_status` and logged at each tenth of the way; `disk.wipe_cancel` aborts it between chunks.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { type DiskWipeAnswer, type WipeDevice, wipeDisk, WipeError, type WipeProgress } from "../../core/disks/mod.ts";
import type { HelperArgs } from "../../core/helper/protocol.ts";
import { HelperError } from "../../core/helper/errors.ts";
import { type CheckedDisk, DiskGuard, DiskRefused } from "./disk_guard.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { DiskClaims } from "./disk_claims.ts";

/** A disk opened for a wipe, closed after it. */
export type OpenedDisk = WipeDevice & { close(): void };

/** What the wipes use: the guard, how a checked disk is opened (tests: a fake), a logger. */
export interface DiskWipesOptions {
  readonly guard?: DiskGuard;
  readonly open?: (disk: CheckedDisk) => Promise<OpenedDisk>;
  readonly log?: Logger;
  /** Shared with the deploys, so one disk is written by one op at a time. */
  readonly claims?: DiskClaims;
}

/** The wipes root runs, by disk id. */
export class DiskWipes {
  readonly #guard: DiskGuard;
  readonly #open: (disk: CheckedDisk) => Promise<OpenedDisk>;
  readonly #log: Logger | undefined;
  readonly #claims: DiskClaims;
  readonly #running = new Map<string, { ctl: AbortController; progress: WipeProgress | null }>();

  constructor(o: DiskWipesOptions = {}) {
    this.#guard = o.guard ?? new DiskGuard();
    this.#open = o.open ?? ((d) => BlockWipeDevice.open(d.kernelName));
    this.#log = o.log;
    this.#claims = o.claims ?? new DiskClaims();
  }

  /** Checks the disk, wipes it, and answers the outcome or why not (`busy` when one runs on it already). */
  async wipe(a: HelperArgs["disk.wipe"]): Promise<DiskWipeAnswer> {
    if (this.#running.has(a.diskId)) throw new HelperError("busy", `disk.wipe: a wipe of ${a.diskId} is running`);
    const job = { ctl: new AbortController(), progress: null as WipeProgress | null };
    this.#running.set(a.diskId, job);
    try {
      let disk: CheckedDisk;
      try {
        disk = await this.#guard.check(a.diskId);
      } catch (e) {
        if (!(e instanceof DiskRefused)) throw e;
        return { diskId: a.diskId, ok: false, reason: e.reason, message: e.message, attempts: [] };
      }
      const release = this.#claims.claim(disk.kernelName, `disk.wipe of ${a.diskId}`);
      const dev = await this.#open(disk).catch((e) => {
        release();
        throw e;
      });
      let tenth = -1;
      try {
        const outcome = await wipeDisk(dev, {
          pattern: a.pattern,
          verify: a.verify,
          ...(a.only ? { only: a.only } : {}),
        }, {
          signal: job.ctl.signal,
          onProgress: (p) => {
            job.progress = p;
            const t = Math.floor((10 * p.doneBytes) / Math.max(1, p.totalBytes));
            if (t !== tenth) {
              tenth = t;
              this.#log?.info({ disk_id: a.diskId, method: p.method, phase: p.phase, done: p.doneBytes }, "disk.wipe");
            }
          },
        });
        return { diskId: a.diskId, ok: true, outcome };
      } catch (e) {
        if (!(e instanceof WipeError)) throw e;
        return { diskId: a.diskId, ok: false, reason: e.reason, message: e.message, attempts: e.attempts };
      } finally {
        dev.close();
        release();
      }
    } finally {
      this.#running.delete(a.diskId);
    }
  }

  /** Where the disk's running wipe stands; `null` when none runs. */
  status(diskId: string): WipeProgress | null {
    return this.#running.get(diskId)?.progress ?? null;
  }

  /** Tells the disk's running wipe to stop between chunks; false when none runs. */
  cancel(diskId: string): boolean {
    const job = this.#running.get(diskId);
    job?.ctl.abort();
    return job !== undefined;
  }
}
