/**
 * The host port of the access converger: sshd's files, written by the root helper (`access.observe`,
 * `access.apply`), by the direct runtime in the helper itself (`runtimes/access/sshd_files.ts`), or by the in-memory
 * fake in tests ({@link ./fake_host.ts}). One contract suite runs against each.
 *
 * @module
 */
import type { AccessFiles, AccessObserved } from "./files.ts";

/** What one `apply` did. */
export interface AccessApplied {
  /** Files written (names relative to the ssh directory), in the order written. */
  readonly written: readonly string[];
  /** Files removed. */
  readonly removed: readonly string[];
  /** Whether sshd was reloaded (only when the drop-in changed). */
  readonly reloaded: boolean;
}

/** sshd's access files on a host. */
export interface AccessHost {
  /** What is on disk now. */
  observe(): Promise<AccessObserved>;
  /**
   * Makes the files say `files`: each written atomically, only when it differs; the drop-in checked with `sshd -t`
   * before it is put in place (a failing one leaves every old file); sshd reloaded only when the drop-in changed.
   * {@link ./files.ts isNoAccess} files remove everything. Throws with the tool's message when a step fails.
   */
  apply(files: AccessFiles): Promise<AccessApplied>;
}
