/**
 * The versioned config tree (seed 004 T1 `agentconfig.Tree`): `<root>/<version>/` directories, each with a
 * `version` file, and a relative `current` symlink flipped by rename. An install stages, unpacks through the safety
 * kernel, writes the version file, pins modes, renames into place (skipped when the version is already there), runs
 * `beforeFlip`, flips `current` and prunes older versions, keeping dot-prefixed entries.
 *
 * Crash safety: `current` only ever names a directory that was complete before it was renamed into place, and the
 * flip is a rename of a fresh symlink over `current`, so a crash at any step leaves either the whole old tree or the
 * whole new one behind it. Staging directories (`.staging-*`) and flip links (`.current-*`) left by a crash are
 * removed by the next install.
 *
 * Power loss: the same promise holds on a disk. Before the rename into place every file and directory of the
 * staged version is fsynced, and the root is fsynced after that rename and after the flip, so `current` never
 * reaches the disk ahead of the files it names. Without this, ext4 (data=ordered, delayed allocation) commits the
 * flip while the new files have no blocks yet, and a power cut leaves `current` naming empty files:
 * `deno task test:powerloss` caught exactly that. Seed 004 puts the guest's tree on tmpfs, where fsync costs
 * nothing; `bcd-guest bundle install --root` may point anywhere.
 *
 * @module
 */
import { join } from "../util/path.ts";
import type { Logger } from "../log/mod.ts";
import { silentLogger } from "../log/mod.ts";
import { type Check, DIR_MODE, FILE_MODE, unpack } from "./bundle_walk.ts";
import { settled } from "../settled.ts";

/** The steps of an install, in order (names for logs and for crash tests). */
export const INSTALL_STEPS = [
  "cleanup",
  "staging",
  "unpack",
  "version-file",
  "mode-pin",
  "rename",
  "before-flip",
  "flip",
  "prune",
] as const;
/** One step of {@link Tree.install}. */
export type InstallStep = typeof INSTALL_STEPS[number];

/** The name of the symlink that names the live version. */
export const CURRENT = "current";
const _VERSION_RE = /^[A-Za-z0-9_-]+$/;
const _STAGING = ".staging-";
const _FLIP = ".current-";

/** Options of a {@link Tree}. */
export interface TreeOptions {
  log?: Logger;
  /** Called before each step; crash tests end the process here. Production code leaves it unset. */
  beforeStep?: (step: InstallStep) => void | Promise<void>;
  /**
   * Creates the flip link `path` → `target` (default `Deno.symlink`). Deno refuses symlink creation under a
   * path-scoped `--allow-write`, so a process confined that way passes one that runs `ln -s -- target path`.
   */
  symlink?: (target: string, path: string) => Promise<void>;
}

const _locks = new Map<string, Promise<unknown>>();

function _random(): string {
  return crypto.randomUUID().slice(0, 8);
}

async function _lstat(p: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(p);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** fsyncs every file under `dir`, then each directory after its entries, `dir` last. */
async function _syncAll(dir: string): Promise<void> {
  for await (const ent of Deno.readDir(dir)) {
    const p = join(dir, ent.name);
    if (ent.isDirectory) await _syncAll(p);
    else await _sync(p);
  }
  await _sync(dir);
}

/** fsyncs one file or directory. */
async function _sync(path: string): Promise<void> {
  using f = await Deno.open(path, { read: true });
  await f.sync();
}

async function _pinModes(dir: string): Promise<void> {
  await Deno.chmod(dir, DIR_MODE);
  for await (const ent of Deno.readDir(dir)) {
    const p = join(dir, ent.name);
    if (ent.isDirectory) await _pinModes(p);
    else if (ent.isFile) await Deno.chmod(p, FILE_MODE);
    else throw new TypeError(`${p} is neither a file nor a directory`);
  }
}

/** A versioned config tree under `root` (seed 004 `agentconfig.Tree`). */
export class Tree {
  readonly #log: Logger;
  readonly #beforeStep: TreeOptions["beforeStep"];
  readonly #symlink: (target: string, path: string) => Promise<void>;

  constructor(readonly root: string, opts: TreeOptions = {}) {
    this.#log = opts.log ?? silentLogger();
    this.#beforeStep = opts.beforeStep;
    this.#symlink = opts.symlink ?? ((target, path) => Deno.symlink(target, path));
  }

  /** Creates the root (0755) if missing; refuses a root that is not a directory or is a symlink. */
  async ensureRoot(): Promise<void> {
    await Deno.mkdir(this.root, { recursive: true, mode: DIR_MODE });
    const st = await Deno.lstat(this.root);
    if (!st.isDirectory) throw new TypeError(`config tree root ${this.root} is not a directory`);
  }

  /** The version `current` names, or `null` when nothing was installed. */
  async currentVersion(): Promise<string | null> {
    try {
      return await Deno.readLink(join(this.root, CURRENT));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }

  /**
   * Installs `tarball` as `version` and flips `current` to it. `version` must match `^[A-Za-z0-9_-]+$` and not be
   * `current` (else `RangeError`); `""` only ensures the root and takes no bundle (seed 004: `""` with no chunks; a
   * non-empty `tarball` with it is a `RangeError`). Unsafe bundles throw {@link UnsafeBundle} and `check`'s errors pass
   * through. Idempotent per version: an existing version directory is kept as it is. A failed install leaves nothing
   * behind: not its staging directory, not a version directory it renamed into place but could not flip to (a
   * `beforeFlip` or flip error), not the root when it created it; `current` stays unflipped. Installs into one root
   * are serialized within the process.
   */
  install(
    version: string,
    tarball: Uint8Array,
    check: Check = {},
    beforeFlip?: (versionDir: string) => void | Promise<void>,
  ): Promise<void> {
    if (version === "") {
      if (tarball.length > 0) {
        return Promise.reject(
          new RangeError(`an empty config version installs no tree; it takes no bundle (got ${tarball.length} bytes)`),
        );
      }
      return this.ensureRoot();
    }
    if (!_VERSION_RE.test(version) || version === CURRENT) {
      return Promise.reject(new RangeError(`config version ${JSON.stringify(version)} is not allowed`));
    }
    const prev = _locks.get(this.root) ?? Promise.resolve();
    const run = settled(prev).then(() => this.#install(version, tarball, check, beforeFlip));
    _locks.set(this.root, run);
    return run.finally(() => {
      if (_locks.get(this.root) === run) _locks.delete(this.root);
    });
  }

  /** Removes what a failed install made: `made` (those that exist), or the whole root when the install created it. */
  async #undo(rootExisted: boolean, made: string[]): Promise<void> {
    for (const p of rootExisted ? made : [this.root]) {
      if (await _lstat(p)) await Deno.remove(p, { recursive: true });
    }
  }

  async #step(step: InstallStep): Promise<void> {
    if (this.#beforeStep) await this.#beforeStep(step);
  }

  async #install(
    version: string,
    tarball: Uint8Array,
    check: Check,
    beforeFlip?: (versionDir: string) => void | Promise<void>,
  ): Promise<void> {
    const rootExisted = (await _lstat(this.root)) !== null;
    await this.ensureRoot();
    const staging = join(this.root, `${_STAGING}${_random()}`);
    const versionDir = join(this.root, version);
    const link = join(this.root, `${_FLIP}${_random()}`);
    let placed = false;
    try {
      await this.#step("cleanup");
      for await (const ent of Deno.readDir(this.root)) {
        if (ent.name.startsWith(_STAGING) || ent.name.startsWith(_FLIP)) {
          await Deno.remove(join(this.root, ent.name), { recursive: true });
          this.#log.warn({ entry: ent.name }, "removed a leftover of an interrupted install");
        }
      }
      await this.#step("staging");
      await Deno.mkdir(staging, { mode: DIR_MODE });
      await this.#step("unpack");
      await unpack(tarball, staging, check);
      await this.#step("version-file");
      const vf = join(staging, "version");
      const old = await _lstat(vf);
      if (old !== null) await Deno.remove(vf, { recursive: true });
      await Deno.writeTextFile(vf, version, { createNew: true });
      await this.#step("mode-pin");
      await _pinModes(staging);
      await _syncAll(staging);
      await this.#step("rename");
      const existing = await _lstat(versionDir);
      if (existing?.isDirectory) {
        await Deno.remove(staging, { recursive: true });
        this.#log.info({ version }, "config version already installed; kept as it is");
      } else {
        if (existing !== null) await Deno.remove(versionDir, { recursive: true });
        await Deno.rename(staging, versionDir);
        placed = true;
        await _sync(this.root);
      }
      await this.#step("before-flip");
      if (beforeFlip) await beforeFlip(versionDir);
      await this.#step("flip");
      await this.#symlink(version, link);
      await Deno.rename(link, join(this.root, CURRENT));
    } catch (e) {
      await this.#undo(rootExisted, placed ? [staging, link, versionDir] : [staging, link]);
      throw e;
    }
    // After the catch: once `current` names the new version, undoing it would leave `current` dangling.
    await _sync(this.root);
    await this.#step("prune");
    for await (const ent of Deno.readDir(this.root)) {
      if (ent.name.startsWith(".") || ent.name === CURRENT || ent.name === version) continue;
      await Deno.remove(join(this.root, ent.name), { recursive: true });
    }
    this.#log.info({ version }, "config tree installed");
  }
}
