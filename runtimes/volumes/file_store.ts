/**
 * The real volume store (000 §Persistent volumes, "The store"): `<data dir>/volumes/<id>.raw`, a sparse raw file
 * (0600), with `<id>.json` (`{"serial": …}`, 0600) beside it. A volume is created under `<id>.raw.tmp` (exclusive,
 * truncated to its size, so it takes no blocks) and renamed into place once its `.json` is written; it grows by
 * truncation; it is destroyed by punching its blocks out (`fallocate --punch-hole`, which frees them even while a
 * process still holds the file open), then unlinking both files. The filesystem's figures are `statfs(2)` of the
 * directory (`node:fs` `statfs`, Deno's `--allow-sys=statfs`).
 *
 * Only the node writes this directory (0700, its own), and every file is checked with `lstat` before it is touched:
 * a link or anything but a plain file in a volume's place is refused, never followed.
 *
 * @module
 */
import { VOLUME_ID } from "../../core/volumes/grammar.ts";
import type { FsFigures } from "../../core/volumes/space.ts";
import { shrinkRefusal, type StoredVolume, VolumeRefused, type VolumeStore } from "../../core/volumes/store.ts";
import type { Logger } from "../../core/log/mod.ts";

/** The most bytes of an `<id>.json` read back. */
const MAX_META_BYTES = 4096;

/** The store's directory under a data dir. */
export function volumesDir(dataDir: string): string {
  return `${dataDir}/volumes`;
}

/** Options of {@link FileVolumeStore}. */
export interface FileVolumeStoreOptions {
  /** `<data dir>/volumes`. */
  readonly dir: string;
  /** Punches a file's blocks out (default `fallocate --punch-hole`); tests count calls through it. */
  readonly punch?: (path: string, bytes: number) => Promise<void>;
  readonly log?: Logger;
}

/** `fallocate --punch-hole --offset 0 --length <bytes> <path>`; throws with fallocate's words when it fails. */
export async function punchHoles(path: string, bytes: number): Promise<void> {
  if (bytes === 0) return;
  const out = await new Deno.Command("fallocate", {
    args: ["--punch-hole", "--offset", "0", "--length", String(bytes), path],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`fallocate --punch-hole ${path}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/** The store over a directory. */
export class FileVolumeStore implements VolumeStore {
  readonly dir: string;
  readonly #punch: (path: string, bytes: number) => Promise<void>;
  readonly #log: Logger | undefined;

  constructor(opts: FileVolumeStoreOptions) {
    this.dir = opts.dir;
    this.#punch = opts.punch ?? punchHoles;
    this.#log = opts.log;
  }

  /** The raw file of volume `id`. */
  rawPath(id: string): string {
    return `${this.dir}/${_id(id)}.raw`;
  }

  async #ensureDir(): Promise<void> {
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  async list(): Promise<StoredVolume[]> {
    const out: StoredVolume[] = [];
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(this.dir));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return [];
      throw e;
    }
    for (const e of entries) {
      if (!e.name.endsWith(".raw")) continue;
      const id = e.name.slice(0, -4);
      if (!VOLUME_ID.test(id)) continue;
      const st = await _plain(`${this.dir}/${e.name}`);
      if (!st) {
        this.#log?.warn({ volume: id }, "volume store: not a plain file in a volume's place; ignored");
        continue;
      }
      out.push({ id, serial: await this.#serial(id), sizeBytes: st.size, allocatedBytes: (st.blocks ?? 0) * 512 });
    }
    return out.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  }

  async #serial(id: string): Promise<string> {
    const path = `${this.dir}/${id}.json`;
    const st = await _plain(path);
    if (!st || st.size > MAX_META_BYTES) return "";
    try {
      const v = JSON.parse(await Deno.readTextFile(path)) as { serial?: unknown };
      return typeof v?.serial === "string" ? v.serial : "";
    } catch (e) {
      if (e instanceof SyntaxError || e instanceof Deno.errors.NotFound) return "";
      throw e;
    }
  }

  async fs(): Promise<FsFigures> {
    await this.#ensureDir();
    // node:fs, loaded at the first figures, not at the agent's start (issue 24).
    const { statfs } = await import("node:fs/promises");
    const s = await statfs(this.dir);
    return { totalBytes: s.blocks * s.bsize, availableBytes: s.bavail * s.bsize };
  }

  async create(id: string, serial: string, sizeBytes: number): Promise<void> {
    const raw = this.rawPath(id);
    await this.#ensureDir();
    if (await _plain(raw) || await _exists(raw)) throw new Deno.errors.AlreadyExists(`volume ${id} exists`);
    await this.#writeSerial(id, serial);
    const tmp = `${raw}.tmp`;
    await Deno.remove(tmp).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    {
      using f = await Deno.open(tmp, { write: true, createNew: true, mode: 0o600 });
      await f.truncate(sizeBytes);
      await f.sync();
    }
    await Deno.rename(tmp, raw);
  }

  async #writeSerial(id: string, serial: string): Promise<void> {
    const path = `${this.dir}/${id}.json`;
    const tmp = `${path}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify({ serial }) + "\n", { mode: 0o600 });
    await Deno.rename(tmp, path);
  }

  async grow(id: string, sizeBytes: number): Promise<void> {
    const raw = this.rawPath(id);
    const st = await _plain(raw);
    if (!st) throw new VolumeRefused("bad-volume", `volume ${id}: ${raw} is not a plain file`);
    if (sizeBytes < st.size) throw shrinkRefusal(id, st.size, sizeBytes);
    if (sizeBytes === st.size) return;
    {
      using f = await Deno.open(raw, { write: true });
      await f.truncate(sizeBytes);
      await f.sync();
    }
  }

  async setSerial(id: string, serial: string): Promise<void> {
    if (!(await _plain(this.rawPath(id)))) throw new Deno.errors.NotFound(`volume ${id} does not exist`);
    await this.#writeSerial(id, serial);
  }

  async destroy(id: string): Promise<void> {
    const raw = this.rawPath(id);
    const st = await _plain(raw);
    if (st) {
      await this.#punch(raw, st.size);
      await Deno.remove(raw);
    } else if (await _exists(raw)) {
      throw new VolumeRefused("bad-volume", `volume ${id}: ${raw} is not a plain file; not destroyed`);
    }
    await Deno.remove(`${this.dir}/${id}.json`).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}

function _id(id: string): string {
  if (!VOLUME_ID.test(id)) throw new TypeError(`volume id ${JSON.stringify(id)} is not 1 to 80 of [A-Za-z0-9_-]`);
  return id;
}

/** The file's info when it is a plain file (never following a link), else `undefined`. */
async function _plain(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    const st = await Deno.lstat(path);
    return st.isFile ? st : undefined;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
