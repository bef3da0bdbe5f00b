/**
 * The helper's releases (the self-update's root half): `<root>/releases/<version>/` (an unpacked release, immutable
 * once renamed into place), `<root>/current` (a relative symlink to `releases/<version>`, the tree the service runs),
 * and `<root>/state.json` (a pending swap awaiting its confirm, the last rolled-back release). At most two releases are
 * kept: the one `current` names and the one before it.
 *
 * Crash safety: a release directory is complete (unpacked, executables marked, fsynced) before it is renamed into
 * place; the pending record reaches the disk before `current` moves; `current` moves by renaming a fresh link over it.
 * So a crash anywhere leaves `current` naming one whole release, and {@link ReleaseStore.recover} at the next start
 * finishes what the record says: a pending swap whose link never moved is dropped, one past its deadline is rolled
 * back, one within it keeps its deadline.
 *
 * @module
 */
import { join } from "node:path";
import type { FailedRelease, PendingSwap, ReleaseState } from "../../core/daemon/ports.ts";
import { checkReleaseVersion, MAX_RELEASE_BYTES } from "../../core/daemon/release.ts";
import { unpack } from "../../core/images/bundle_walk.ts";
import { writeFileDurable } from "../../core/journal/durable_file.ts";
import type { Logger } from "../../core/log/mod.ts";

/** The link the service runs. */
export const CURRENT_LINK = "current";
const STATE_FILE = "state.json";
const STAGING = ".staging-";
/** The caps a release's tar is unpacked under (the bundle carries the Deno runtime). */
export const RELEASE_LIMITS = { maxFiles: 2_000, maxBytes: MAX_RELEASE_BYTES / 2 } as const;
/** Files of a release that are programs: the launchers (`bcd-<role>`) and the runtime beside them (`deno`). */
const EXECUTABLE = /^(?:bcd-[a-z]+|deno)$/;

interface _Record {
  pending: PendingSwap | null;
  failed: FailedRelease | null;
}

async function _lstat(p: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(p);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

async function _sync(path: string): Promise<void> {
  using f = await Deno.open(path, { read: true });
  await f.sync();
}

async function _syncTree(dir: string): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) await _syncTree(p);
    else await _sync(p);
  }
  await _sync(dir);
}

/** The store under `root`. */
export class ReleaseStore {
  constructor(readonly root: string, private readonly log?: Logger) {}

  get releasesDir(): string {
    return join(this.root, "releases");
  }

  /** The version `current` names, or `null`. */
  async current(): Promise<string | null> {
    let target: string;
    try {
      target = await Deno.readLink(join(this.root, CURRENT_LINK));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
    const m = /^releases\/([^/]+)$/.exec(target);
    return m ? m[1]! : null;
  }

  async #record(): Promise<_Record> {
    let text: string;
    try {
      text = await Deno.readTextFile(join(this.root, STATE_FILE));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { pending: null, failed: null };
      throw e;
    }
    if (text.length > 64 * 1024) throw new RangeError(`${STATE_FILE} is over 64 KiB`);
    const o = JSON.parse(text) as Partial<_Record>;
    return { pending: o.pending ?? null, failed: o.failed ?? null };
  }

  async #write(r: _Record): Promise<void> {
    await writeFileDurable(join(this.root, STATE_FILE), new TextEncoder().encode(JSON.stringify(r) + "\n"));
  }

  /** The releases kept, sorted. */
  async versions(): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const e of Deno.readDir(this.releasesDir)) {
        if (e.isDirectory && !e.name.startsWith(".")) out.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out.sort();
  }

  async state(): Promise<ReleaseState> {
    const r = await this.#record();
    const current = await this.current();
    const others = (await this.versions()).filter((v) => v !== current);
    const previous = r.pending?.previous ?? (others.length > 0 ? others[others.length - 1]! : null);
    return { current, previous, pending: r.pending, failed: r.failed };
  }

  /**
   * Unpacks a gzip tar (already verified) into `releases/<version>/` through the tar safety kernel, marking only the
   * launchers and the runtime executable. A version already there is kept as it is (releases are immutable).
   */
  async unpack(version: string, tarball: Uint8Array): Promise<void> {
    checkReleaseVersion(version);
    await Deno.mkdir(this.releasesDir, { recursive: true, mode: 0o755 });
    for await (const e of Deno.readDir(this.releasesDir)) {
      if (e.name.startsWith(STAGING)) await Deno.remove(join(this.releasesDir, e.name), { recursive: true });
    }
    const dest = join(this.releasesDir, version);
    if ((await _lstat(dest))?.isDirectory) {
      this.log?.info({ version }, "daemon: release already unpacked; kept as it is");
      return;
    }
    const staging = join(this.releasesDir, `${STAGING}${crypto.randomUUID().slice(0, 8)}`);
    await Deno.mkdir(staging, { mode: 0o755 });
    try {
      await unpack(tarball, staging, {}, RELEASE_LIMITS);
      for await (const e of Deno.readDir(staging)) {
        if (e.isFile && EXECUTABLE.test(e.name)) await Deno.chmod(join(staging, e.name), 0o755);
      }
      await _syncTree(staging);
      await Deno.rename(staging, dest);
      await _sync(this.releasesDir);
    } catch (e) {
      await Deno.remove(staging, { recursive: true }).catch((c) => {
        if (!(c instanceof Deno.errors.NotFound)) throw c;
      });
      throw e;
    }
  }

  /** Points `current` at `version` by renaming a fresh link over it. */
  async #flip(version: string): Promise<void> {
    const link = join(this.root, `.current-${crypto.randomUUID().slice(0, 8)}`);
    await Deno.symlink(`releases/${version}`, link);
    await Deno.rename(link, join(this.root, CURRENT_LINK));
    await _sync(this.root);
  }

  /** Records the pending swap durably, then moves `current` to `version` (which must be unpacked). */
  async swap(version: string, deadlineMs: number): Promise<PendingSwap> {
    if (!(await _lstat(join(this.releasesDir, version)))?.isDirectory) {
      throw new Deno.errors.NotFound(`release ${version} is not unpacked`);
    }
    const r = await this.#record();
    const pending: PendingSwap = { version, previous: await this.current(), deadlineMs };
    await this.#write({ ...r, pending });
    this.log?.info(
      { version, previous: pending.previous, deadline: new Date(deadlineMs).toISOString() },
      "daemon: swapping",
    );
    await this.#flip(version);
    this.log?.info({ version }, "daemon: current swapped");
    return pending;
  }

  /** The new process of `version` reached `Welcome`: the swap stands; older releases beyond the previous go. */
  async confirm(version: string): Promise<boolean> {
    const r = await this.#record();
    if (r.pending === null || r.pending.version !== version || (await this.current()) !== version) return false;
    await this.#write({ pending: null, failed: r.failed?.version === version ? null : r.failed });
    await this.#prune(version, r.pending.previous);
    this.log?.info({ version }, "daemon: release confirmed");
    return true;
  }

  /**
   * Moves `current` back to the pending swap's previous release (or removes it, when the swap made the first one: the
   * agent did not run from a release then) and records why; the failed release is removed.
   */
  async rollback(reason: string, message: string): Promise<FailedRelease | null> {
    const r = await this.#record();
    const p = r.pending;
    if (p === null) return null;
    if (p.previous !== null) await this.#flip(p.previous);
    else {
      await Deno.remove(join(this.root, CURRENT_LINK));
      await _sync(this.root);
    }
    const failed: FailedRelease = { version: p.version, reason, message };
    await this.#write({ pending: null, failed });
    await Deno.remove(join(this.releasesDir, p.version), { recursive: true });
    this.log?.warn({ version: p.version, previous: p.previous, reason, message }, "daemon: rolled back");
    return failed;
  }

  /**
   * Finishes what a crash left (called when the helper starts): a pending swap whose link never moved is dropped; one
   * past its deadline is rolled back. Returns the pending swap still waiting for its confirm, if any.
   */
  async recover(nowMs: number): Promise<PendingSwap | null> {
    const r = await this.#record();
    if (r.pending === null) return null;
    if ((await this.current()) !== r.pending.version) {
      await this.#write({ ...r, pending: null });
      this.log?.warn({ version: r.pending.version }, "daemon: a swap that never happened dropped");
      return null;
    }
    if (nowMs >= r.pending.deadlineMs) {
      await this.rollback("rolled-back", `release ${r.pending.version} did not reach Welcome before its deadline`);
      return null;
    }
    return r.pending;
  }

  async #prune(keep: string, previous: string | null): Promise<void> {
    for (const v of await this.versions()) {
      if (v === keep || v === previous) continue;
      await Deno.remove(join(this.releasesDir, v), { recursive: true });
      this.log?.info({ version: v }, "daemon: old release removed");
    }
  }
}
