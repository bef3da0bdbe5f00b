/**
 * One rebind try on a running guest (000 §Identity rebind, steps 2–4), over a runtime's {@link RebindDisk}: write the
 * image, hot-add it (serial `bc-rebind`, target `vdz`), wait up to 2 minutes for `BCREBOUND <nonce>` in its last
 * 4 KiB, then hot-remove it and zero and delete its file either way, so the secret never stays on the host. The wait
 * polls every second on the injected clock.
 *
 * @module
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log/mod.ts";
import { isRebindAnswer } from "./image.ts";

/** How long a try waits for the guest's answer. */
export const REBIND_WAIT_MS = 120_000;
/** How often it looks. */
export const REBIND_POLL_MS = 1000;

/** A runtime's rebind disk for one instance. */
export interface RebindDisk {
  /** Writes the image to the instance's rebind file (created new, readable by the hypervisor only). */
  write(image: Uint8Array): Promise<void>;
  /** Hot-adds the file as `vdz` with serial `bc-rebind`. */
  attach(): Promise<void>;
  /** The file's last 4 KiB (the answer block). */
  answer(): Promise<Uint8Array>;
  /** Hot-removes the disk (nothing to do when it is not attached). */
  detach(): Promise<void>;
  /** Zeroes the file, then deletes it (nothing to do when it is gone). */
  destroy(): Promise<void>;
}

/** Options of {@link runRebind}. */
export interface RunRebindOptions {
  readonly clock: Pick<Clock, "monotonic" | "sleep">;
  readonly log?: Logger;
  readonly waitMs?: number;
  readonly pollMs?: number;
  readonly instance?: string;
}

/**
 * One try: true when the guest answered with `nonce`. An error of the write or attach is thrown after the file was
 * zeroed and deleted; a failed detach is logged (the outcome is the answer's); an error of the zeroing or delete is
 * thrown (the secret may still be on disk).
 */
export async function runRebind(
  disk: RebindDisk,
  image: Uint8Array,
  nonce: string,
  o: RunRebindOptions,
): Promise<boolean> {
  let answered = false;
  let failure: unknown;
  try {
    await disk.write(image);
    await disk.attach();
    const until = o.clock.monotonic() + (o.waitMs ?? REBIND_WAIT_MS);
    for (;;) {
      if (isRebindAnswer(await disk.answer(), nonce)) {
        answered = true;
        break;
      }
      if (o.clock.monotonic() >= until) break;
      await o.clock.sleep(o.pollMs ?? REBIND_POLL_MS);
    }
  } catch (e) {
    failure = e;
  }
  try {
    await disk.detach();
  } catch (e) {
    // A guest that has not released the disk yet (or a failed unplug) keeps it attached; its file is zeroed and
    // deleted below all the same, so nothing of the secret stays. The try's outcome is the answer's.
    o.log?.warn({ instance: o.instance, err: e instanceof Error ? e.message : String(e) }, "rebind: detach failed");
  }
  await disk.destroy();
  if (failure !== undefined) throw failure;
  return answered;
}
