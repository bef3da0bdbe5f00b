/**
 * The disks root is writing now, by kernel name: a wipe or a deploy claims its disk after the guard resolved it, so
 * two by-id names of one disk (`nvme-…` and `wwn-…`), or a wipe and a deploy, never write it at once (`busy`).
 *
 * @module
 */
import { HelperError } from "../../core/helper/errors.ts";

/** The claimed disks, shared by root's wipes and deploys. */
export class DiskClaims {
  readonly #held = new Map<string, string>();

  /** Claims `kernelName` for `what` (e.g. `disk.wipe of wwn-…`); throws `busy` naming the holder. */
  claim(kernelName: string, what: string): () => void {
    const holder = this.#held.get(kernelName);
    if (holder !== undefined) throw new HelperError("busy", `${what}: ${kernelName} is being written by ${holder}`);
    this.#held.set(kernelName, what);
    return () => this.#held.delete(kernelName);
  }
}
