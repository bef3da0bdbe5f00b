/**
 * Identity rebind (000 §Identity rebind): a memory restore that vps gives its own identity carries
 * `InstanceSpec.identity_rebind_ref`, a sealed bundle bcd installs into the running guest on a small raw disk.
 *
 * - `bundle.ts`: {@link parseRebind}, the bundle's checks ({@link RebindMalformed}: never retried).
 * - `image.ts`: the 1 MiB image (tar at 0, the last 4 KiB for `BCREBOUND <nonce>`), {@link isRebindAnswer}.
 * - `disk.ts`: one try over a runtime's {@link RebindDisk} ({@link runRebind}): write, hot-add, wait up to 2 minutes,
 *   hot-remove, zero and delete either way.
 * - `rebind_file.ts`: the disk's file on the host, the same for every runtime ({@link rebindFileDisk}): created new
 *   with the runtime's mode, the answer block read back, zeroed and deleted.
 * - `rebound_store.ts`: `data_dir/instances-rebound.json` ({@link ReboundFile}).
 * - `guest_half.ts`: the guest's udev rule, unit and script, as the guest agent's documentation prints them.
 *
 * The driver that fetches the bundle, counts tries (3 per reference, 5 minutes apart) and records the result is the
 * instances converger's (`core/converge/instances/identity_rebind.ts`).
 *
 * @module
 */
export {
  MAX_PRINCIPALS,
  MAX_REBIND_BUNDLE,
  parseRebind,
  REBIND_MALFORMED,
  type RebindBundle,
  RebindMalformed,
} from "./bundle.ts";
export {
  isRebindAnswer,
  REBIND_ANSWER_BYTES,
  REBIND_ANSWER_OFFSET,
  REBIND_ANSWER_WORD,
  REBIND_DISK_BYTES,
  REBIND_SERIAL,
  REBIND_TARGET,
  rebindImage,
  rebindNonce,
} from "./image.ts";
export { REBIND_POLL_MS, REBIND_WAIT_MS, type RebindDisk, runRebind, type RunRebindOptions } from "./disk.ts";
export { readAnswerBlock, rebindFileDisk, type RebindFileHooks, zeroAndDelete } from "./rebind_file.ts";
export { REBOUND_FILE, ReboundFile, ReboundFileCorrupt, type ReboundStore } from "./rebound_store.ts";
