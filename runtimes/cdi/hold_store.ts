/**
 * The hold store on disk: CDI specs `<cdi dir>/bcd-<allocation id>.json` (default `/etc/cdi`) and env files
 * `<env dir>/<allocation id>.env` (default `/run/bcd/allocations`), each written atomically; holds are read back from
 * the CDI directory on every pass. Specs of other vendors in the CDI directory are never read or touched.
 *
 * A spec is read only as the regular file it was listed as: `lstat`, open, then `fstat` of the open file compared with
 * the `lstat` (device and inode), so a link or another file swapped in after the listing is never followed (no
 * `O_NOFOLLOW` in Deno's `open`); such a spec is reported unreadable, naming why.
 *
 * @module
 */
import { isValidAllocationId } from "../../core/converge/devices/assignment.ts";
import type { HoldRecord, ObservedHold, UnreadableHold } from "../../core/converge/devices/hold.ts";
import type { HoldListing, HoldStore } from "../../core/converge/devices/ports.ts";
import { atomicWrite, removeDurably } from "./atomic_write.ts";
import { CdiSpecError, cdiSpecText, envFileText, MAX_SPEC_BYTES, parseCdiSpec } from "./spec.ts";
import { type Clock, realClock } from "../../core/clock.ts";

/** Where the store keeps its files. */
export interface CdiHoldStoreOptions {
  readonly cdiDir?: string;
  readonly envDir?: string;
  /** Mode of spec files (default 0644: container runtimes read them). */
  readonly specMode?: number;
  /** Mode of env files (default 0640). */
  readonly envMode?: number;
  /** The wall clock the age of temp files a crashed write left is measured on (default the real clock). */
  readonly clock?: Pick<Clock, "now">;
  /** Test seam: runs after the directories were listed, before any spec is read (a swap's window). */
  readonly afterListing?: () => Promise<void>;
}

/** A temp file of {@link atomicWrite} older than this was left by a write that did not finish: removed. */
export const STALE_TEMP_MS = 10 * 60_000;

const _SPEC = /^bcd-(.+)\.json$/;
const _ENV = /^(.+)\.env$/;

/** The CDI/env hold store. */
export class CdiHoldStore implements HoldStore {
  readonly cdiDir: string;
  readonly envDir: string;
  readonly #specMode: number;
  readonly #envMode: number;
  readonly #clock: Pick<Clock, "now">;
  readonly #afterListing: (() => Promise<void>) | undefined;
  /** Parsed specs by file name, with the stat key they were parsed at. */
  readonly #parsed = new Map<string, { key: string; hold: ObservedHold }>();

  constructor(opts: CdiHoldStoreOptions = {}) {
    this.#clock = opts.clock ?? realClock;
    this.#afterListing = opts.afterListing;
    this.cdiDir = opts.cdiDir ?? "/etc/cdi";
    this.envDir = opts.envDir ?? "/run/bcd/allocations";
    this.#specMode = opts.specMode ?? 0o644;
    this.#envMode = opts.envMode ?? 0o640;
  }

  /** The spec path of an allocation. */
  specPath(allocationId: string): string {
    _checkId(allocationId);
    return `${this.cdiDir}/bcd-${allocationId}.json`;
  }

  /** The env file path of an allocation. */
  envPath(allocationId: string): string {
    _checkId(allocationId);
    return `${this.envDir}/${allocationId}.env`;
  }

  async list(): Promise<HoldListing> {
    const cdiNames = _names(this.cdiDir);
    const envNames = _names(this.envDir);
    await this.#sweepTemps(this.cdiDir, cdiNames, /^\.bcd-.+\.json\.tmp-[0-9a-f-]{36}$/);
    await this.#sweepTemps(this.envDir, envNames, /^\..+\.env\.tmp-[0-9a-f-]{36}$/);
    await this.#afterListing?.();
    const holds: ObservedHold[] = [];
    const unreadable: UnreadableHold[] = [];
    // Every spec is looked at on every pass: stat'ed, and read and parsed again whenever its inode, size or mtime
    // changed (an atomic rewrite is a new inode). The stats are synchronous: an lstat of a local file takes a few
    // microseconds, while each async one is a round trip through the runtime's blocking pool (~20 µs here, 64 holds
    // made it most of an idle pass). A spec parsed at the same stat key is taken as it was, with no promise of its
    // own; reads of changed specs stay async and concurrent, and every failure goes through one `Promise.all`.
    type _Read = { hold?: ObservedHold; bad?: UnreadableHold };
    const read: (_Read | Promise<_Read>)[] = [];
    for (const name of cdiNames) {
      const m = _SPEC.exec(name);
      if (m === null || !isValidAllocationId(m[1]!)) continue;
      const path = `${this.cdiDir}/${name}`;
      const bad = (e: unknown): _Read => {
        if (e instanceof Deno.errors.NotFound) return {}; // removed since the directory was read
        if (!(e instanceof CdiSpecError)) throw e;
        this.#parsed.delete(name);
        return { bad: { allocationId: m[1]!, path, problem: e.message } };
      };
      let st: Deno.FileInfo;
      try {
        st = Deno.lstatSync(path);
        if (!st.isFile) throw new CdiSpecError(`${path} is not a regular file${st.isSymlink ? " (a link)" : ""}`);
      } catch (e) {
        read.push(Promise.reject(e).catch(bad));
        continue;
      }
      const key = `${st.ino}:${st.size}:${st.mtime?.getTime()}`;
      const hit = this.#parsed.get(name);
      if (hit?.key === key) {
        read.push({ hold: hit.hold });
        continue;
      }
      read.push(
        _readBounded(path, st).then((text) => {
          const hold = parseCdiSpec(m[1]!, text);
          this.#parsed.set(name, { key, hold });
          return { hold };
        }).catch(bad),
      );
    }
    for (const r of await Promise.all(read)) {
      if (r.hold) holds.push(r.hold);
      else if (r.bad) unreadable.push(r.bad);
    }
    const present = new Set(cdiNames);
    for (const name of this.#parsed.keys()) if (!present.has(name)) this.#parsed.delete(name);
    const envFiles: string[] = [];
    for (const name of envNames) {
      const m = _ENV.exec(name);
      if (m && isValidAllocationId(m[1]!)) envFiles.push(m[1]!);
    }
    holds.sort((a, b) => a.allocationId < b.allocationId ? -1 : 1);
    return { holds, unreadable, envFiles: envFiles.sort() };
  }

  async #sweepTemps(dir: string, names: readonly string[], pattern: RegExp): Promise<void> {
    for (const name of names) {
      if (!pattern.test(name)) continue;
      const st = await Deno.lstat(`${dir}/${name}`).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return undefined; // another sweep or the writer's rename took it
        throw e;
      });
      if (st?.isFile && st.mtime && this.#clock.now() - st.mtime.getTime() > STALE_TEMP_MS) {
        await Deno.remove(`${dir}/${name}`).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
      }
    }
  }

  async write(r: HoldRecord): Promise<void> {
    await this.writeEnv(r.allocationId, r.env);
    await this.writeSpec(r);
  }

  /** Writes the env file alone, atomically (the root helper's `file.write` of kind `allocation-env`). */
  async writeEnv(allocationId: string, env: readonly string[]): Promise<void> {
    await atomicWrite(this.envPath(allocationId), envFileText(env), this.#envMode);
  }

  /** Writes the CDI spec alone, atomically (the root helper's `file.write` of kind `cdi`). */
  async writeSpec(r: HoldRecord): Promise<void> {
    await atomicWrite(this.specPath(r.allocationId), cdiSpecText(r), this.#specMode);
  }

  async remove(allocationId: string): Promise<void> {
    await this.removeSpec(allocationId);
    await this.removeEnv(allocationId);
  }

  /** Removes the CDI spec alone; true when there was one. */
  removeSpec(allocationId: string): Promise<boolean> {
    return removeDurably(this.specPath(allocationId));
  }

  /** The allocation ids with a spec (`cdi`) or an env file (`allocation-env`). */
  fileIds(kind: "cdi" | "allocation-env"): Promise<ReadonlySet<string>> {
    const re = kind === "cdi" ? _SPEC : _ENV;
    const out = new Set<string>();
    for (const name of _names(kind === "cdi" ? this.cdiDir : this.envDir)) {
      const m = re.exec(name);
      if (m && isValidAllocationId(m[1]!)) out.add(m[1]!);
    }
    return Promise.resolve(out);
  }

  /** Removes the env file alone; true when there was one. */
  async removeEnv(allocationId: string): Promise<void> {
    await removeDurably(this.envPath(allocationId));
  }
}

function _checkId(id: string): void {
  if (!isValidAllocationId(id)) throw new RangeError(`allocation id ${JSON.stringify(id)} cannot name a file`);
}

/** The regular files of `dir` (synchronous, as the stats of a listing: see `list`). */
function _names(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of Deno.readDirSync(dir)) if (e.isFile) out.push(e.name);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  return out.sort();
}

/** Reads the regular file `path` that `listed` (its `lstat`) describes; refuses another file swapped in since. */
async function _readBounded(path: string, listed: Deno.FileInfo): Promise<string> {
  const f = await Deno.open(path, { read: true });
  try {
    const st = await f.stat();
    if (!st.isFile || st.ino !== listed.ino || st.dev !== listed.dev) {
      throw new CdiSpecError(`${path} was replaced after it was listed (a link or another file); not read`);
    }
    const size = st.size;
    if (size > MAX_SPEC_BYTES) throw new CdiSpecError(`spec exceeds ${MAX_SPEC_BYTES} bytes`);
    const buf = new Uint8Array(Math.min(size + 1, MAX_SPEC_BYTES + 1)); // one more: it grew since stat
    let n = 0;
    for (;;) {
      const r = await f.read(buf.subarray(n));
      if (r === null) break;
      n += r;
      if (n >= buf.length) throw new CdiSpecError(`spec grew while it was read`);
    }
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(0, n));
    } catch (e) {
      throw new CdiSpecError("spec is not UTF-8", { cause: e });
    }
  } finally {
    f.close();
  }
}
