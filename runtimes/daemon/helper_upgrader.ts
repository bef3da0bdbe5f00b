/**
 * The root half of the self-update behind the helper's `daemon.*` ops (000 §privilege separation: "the privileged half
 * of self-update … verify, swap, confirm, roll back go through the helper"). `install` reads the staged artifact the
 * agent downloaded (`<agent data dir>/releases-staging/<sha256>.tar.gz`, a path the helper builds from the digest and
 * opens only as a regular file), hashes it again, checks the signature against the release keys root trusts, unpacks
 * it into `releases/<version>/`, records the pending swap, moves `current` and restarts the agent. A confirm from the
 * new process (it reached `Welcome`) makes the swap stand; without one by the deadline the helper moves `current`
 * back, records the release as rolled back, and restarts the agent on the old release. At start the helper finishes
 * what a crash left ({@link ReleaseStore.recover}).
 *
 * @module
 */
import { join } from "../../core/util/path.ts";
import { sha256, toHex } from "../../core/pki/ed25519.ts";
import type { DaemonBackend, InstallAnswer, ReleaseState } from "../../core/daemon/ports.ts";
import {
  checkReleaseVersion,
  checkSha256,
  MAX_RELEASE_BYTES,
  ReleaseRefused,
  verifyReleaseSignature,
} from "../../core/daemon/release.ts";
import { UnsafeBundle } from "../../core/images/errors.ts";
import type { Logger } from "../../core/log/mod.ts";
import type { ReleaseStore } from "./release_store.ts";

/** The agent's staging directory under its data dir, where it downloads releases. */
export const STAGING_DIR = "releases-staging";

/** Options of {@link HelperUpgrader}. */
export interface HelperUpgraderOptions {
  readonly store: ReleaseStore;
  /** The agent's data dir (its staging directory is below it). */
  readonly agentDataDir: string;
  /** The release keys root trusts, read at each install. */
  readonly releaseKeys: () => Promise<readonly Uint8Array[]>;
  /** Restarts the agent (systemd's unit, or the supervisor's child). */
  readonly restart: () => Promise<void>;
  /**
   * Fills the agent's code cache from the build `current` names now (`code_cache.ts`), after a swap and before the
   * restart; a failure is logged and the restart goes ahead (the agent then compiles at its start).
   */
  readonly warm?: () => Promise<void>;
  readonly confirmTimeoutMs: number;
  readonly now?: () => number;
  readonly log?: Logger;
}

/** The helper's upgrader. */
export class HelperUpgrader implements DaemonBackend {
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #now: () => number;

  constructor(private readonly o: HelperUpgraderOptions) {
    this.#now = o.now ?? Date.now;
  }

  /** Finishes what a crash left and arms the deadline of a swap still pending. */
  async start(): Promise<void> {
    const before = (await this.o.store.state()).pending;
    const pending = await this.o.store.recover(this.#now());
    if (pending !== null) this.#arm(pending.deadlineMs);
    else if (before !== null && (await this.o.store.state()).failed?.version === before.version) {
      await this.#restart("rolled back at start");
    }
  }

  /** Stops the deadline timer (the helper is stopping; a restart arms it again from the record). */
  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  status(): Promise<ReleaseState> {
    return this.o.store.state();
  }

  async install(req: { version: string; sha256: string; signature: Uint8Array }): Promise<InstallAnswer> {
    try {
      checkReleaseVersion(req.version);
      checkSha256(req.sha256);
      const pending = (await this.o.store.state()).pending;
      if (pending !== null) {
        throw new ReleaseRefused("swap-pending", `release ${pending.version} is swapped in and not yet confirmed`);
      }
      const bytes = await this.#readStaged(req.sha256);
      const digest = toHex(await sha256(bytes));
      if (digest !== req.sha256) {
        throw new ReleaseRefused("bad-digest", `the staged release hashes to ${digest}, not ${req.sha256}`);
      }
      await verifyReleaseSignature(req.sha256, req.signature, await this.o.releaseKeys());
      try {
        await this.o.store.unpack(req.version, bytes);
      } catch (e) {
        if (e instanceof UnsafeBundle) {
          throw new ReleaseRefused("unsafe-release", `release ${req.version}: ${e.message}`, { cause: e });
        }
        throw e;
      }
    } catch (e) {
      if (!(e instanceof ReleaseRefused)) throw e;
      this.o.log?.warn({ version: req.version, reason: e.reason, err: e.message }, "daemon: release refused");
      return { refused: { reason: e.reason, message: e.message } };
    }
    const p = await this.o.store.swap(req.version, this.#now() + this.o.confirmTimeoutMs);
    this.#arm(p.deadlineMs);
    await Deno.remove(join(this.o.agentDataDir, STAGING_DIR, `${req.sha256}.tar.gz`)).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    // The answer goes out first; the warm-up and the restart follow on the next turn of the event loop.
    setTimeout(() => void this.#warm(req.version).then(() => this.#restart(`release ${req.version} swapped in`)), 0);
    return { installed: true };
  }

  /** The process of `version` reached `Welcome`. */
  async confirm(version: string): Promise<{ confirmed: boolean }> {
    checkReleaseVersion(version);
    const confirmed = await this.o.store.confirm(version);
    if (confirmed) this.stop();
    return { confirmed };
  }

  async #readStaged(sha256: string): Promise<Uint8Array> {
    const path = join(this.o.agentDataDir, STAGING_DIR, `${sha256}.tar.gz`);
    let st: Deno.FileInfo;
    try {
      st = await Deno.lstat(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new ReleaseRefused("not-staged", `no staged release ${sha256}`);
      throw e;
    }
    if (!st.isFile) throw new ReleaseRefused("not-staged", `the staged release ${sha256} is not a regular file`);
    if (st.size > MAX_RELEASE_BYTES) {
      throw new ReleaseRefused("too-large", `the staged release is ${st.size} bytes (most ${MAX_RELEASE_BYTES})`);
    }
    return await Deno.readFile(path);
  }

  #arm(deadlineMs: number): void {
    this.stop();
    this.#timer = setTimeout(() => void this.#deadline(), Math.max(0, deadlineMs - this.#now()));
  }

  async #deadline(): Promise<void> {
    this.#timer = undefined;
    const p = (await this.o.store.state()).pending;
    if (p === null) return;
    await this.o.store.rollback(
      "rolled-back",
      `release ${p.version} did not reach Welcome within ${this.o.confirmTimeoutMs} ms; back on ${p.previous}`,
    );
    await this.#restart(`release ${p.version} rolled back`);
  }

  async #warm(version: string): Promise<void> {
    if (this.o.warm === undefined) return;
    try {
      await this.o.warm();
      this.o.log?.info({ version }, "daemon: the agent's code cache is warm for the new release");
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      this.o.log?.warn({ version, err: e.message }, "daemon: the code cache could not be warmed; the agent compiles");
    }
  }

  async #restart(why: string): Promise<void> {
    this.o.log?.info({ why }, "daemon: restarting the agent");
    try {
      await this.o.restart();
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      this.o.log?.error({ err: e.message }, "daemon: the agent could not be restarted");
    }
  }
}
