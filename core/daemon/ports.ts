/**
 * The self-update's ports: the root helper's half (`daemon.*` ops: what is installed, install-and-swap, confirm) and
 * the download into the agent's staging directory.
 *
 * @module
 */
import type { ReleaseTarget } from "./release.ts";

/** A swap waiting for its new process to reach `Welcome`. */
export interface PendingSwap {
  readonly version: string;
  /** The release `current` named before the swap (rolled back to). */
  readonly previous: string | null;
  /** When the helper rolls back if no confirm came, ms since the epoch. */
  readonly deadlineMs: number;
}

/** A release that was swapped in and rolled back. */
export interface FailedRelease {
  readonly version: string;
  readonly reason: string;
  readonly message: string;
}

/** The releases the helper keeps (`releases/<version>/`, `current`). */
export interface ReleaseState {
  /** The version `current` names; `null` when the agent does not run from a release directory. */
  readonly current: string | null;
  /** The other release kept (at most two are). */
  readonly previous: string | null;
  readonly pending: PendingSwap | null;
  /** The last rolled-back release. */
  readonly failed: FailedRelease | null;
}

/** The helper's `daemon.*` ops as the agent sees them. */
export interface DaemonHost {
  status(): Promise<ReleaseState>;
  /**
   * Verifies the staged artifact of `sha256` again as root, unpacks it into `releases/<version>/`, swaps `current`
   * and restarts the agent: on success this process is about to be stopped.
   */
  install(req: { version: string; sha256: string; signature: Uint8Array }): Promise<void>;
  /** Tells the helper this version's process reached `Welcome`. */
  confirm(version: string): Promise<void>;
}

/** Downloads a release into the agent's staging directory, checking its digest while it streams. */
export interface ReleaseFetcher {
  /** Throws `ReleaseRefused` (`bad-digest`, `not-https`, `too-large`, `download-failed`). */
  fetch(target: ReleaseTarget): Promise<void>;
}

/** What the helper's `daemon.install` answers: installed (the agent restarts now), or refused with the reason. */
export type InstallAnswer =
  | { readonly installed: true }
  | { readonly refused: { readonly reason: string; readonly message: string } };

/** The helper's backend of the `daemon.*` ops (`runtimes/daemon/helper_upgrader.ts`). */
export interface DaemonBackend {
  status(): Promise<ReleaseState>;
  install(req: { version: string; sha256: string; signature: Uint8Array }): Promise<InstallAnswer>;
  confirm(version: string): Promise<{ confirmed: boolean }>;
}
