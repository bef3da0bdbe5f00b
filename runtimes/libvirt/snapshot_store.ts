/**
 * Downloaded snapshots for `restore_from` (000 §Instances): `data_dir/snapshots/<sha256>.tar`, mode 0600 in a 0700
 * directory. A download runs in the background (one per digest) into `.partial-<sha256>-<random>`, https only with
 * redirects only to https, SHA-256 checked while streaming, under the transfer rules (a 2-minute window moving less than
 * 1 MiB, or 6 hours in all, ends it), and is renamed into place only when the digest matches. A failure is reported
 * for {@link SNAPSHOT_RETRY_MS} and then tried again; a digest mismatch, a size beyond the ref's, or a redirect to a
 * plain URL is terminal for the instance. {@link SnapshotStore.prune} deletes the snapshots no spec restores from.
 *
 * @module
 */
import {
  SNAPSHOT_RETRY_MS,
  type SnapshotFetcher,
  type SnapshotFetchState,
  type SnapshotSource,
} from "../../core/converge/instances/snapshot_source.ts";
import type { Logger } from "../../core/log/mod.ts";
import type { TransferClock, TransferLimits } from "../host/https_put.ts";
import { realClock } from "../../core/clock.ts";
import { DownloadRefused, httpsDownload } from "../host/https_download.ts";

/** Options of {@link SnapshotStore}. */
export interface SnapshotStoreOptions {
  /** `data_dir/snapshots`. */
  readonly dir: string;
  readonly fetch?: typeof fetch;
  readonly clock?: TransferClock;
  readonly limits?: Partial<TransferLimits>;
  /** The most bytes a snapshot may have when its ref names no size (default 1 TiB). */
  readonly maxBytes?: number;
  /** Called when a download ends, either way (the node runs a pass then). */
  readonly onSettled?: () => void;
  readonly log?: Logger;
}

const _TERMINAL = new Set(["not-https", "digest-mismatch", "too-large"]);

/** The store. */
export class SnapshotStore implements SnapshotFetcher {
  readonly dir: string;
  readonly #o: SnapshotStoreOptions;
  readonly #clock: TransferClock;
  readonly #inflight = new Map<string, Promise<void>>();
  readonly #failed = new Map<string, { at: number; reason: string; message: string }>();
  readonly #ready = new Set<string>();

  constructor(opts: SnapshotStoreOptions) {
    this.dir = opts.dir;
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
  }

  /** The verified archive of `sha256`. */
  path(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`${JSON.stringify(sha256)} is not a lowercase SHA-256`);
    return `${this.dir}/${sha256}.tar`;
  }

  /** Whether the verified archive of `sha256` is here (a file this store renamed into place, or found at start). */
  #have(sha256: string): boolean {
    if (this.#ready.has(sha256)) return true;
    try {
      if (Deno.lstatSync(this.path(sha256)).isFile) {
        this.#ready.add(sha256);
        return true;
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return false;
  }

  poll(src: SnapshotSource): SnapshotFetchState {
    if (this.#have(src.sha256)) return { state: "ready" };
    if (this.#inflight.has(src.sha256)) return { state: "downloading" };
    const f = this.#failed.get(src.sha256);
    if (f) {
      const terminal = _TERMINAL.has(f.reason);
      if (terminal || this.#clock.monotonic() - f.at < SNAPSHOT_RETRY_MS) {
        return { state: "failed", reason: f.reason, message: f.message, terminal };
      }
      this.#failed.delete(src.sha256);
    }
    const p = this.#download(src).catch((e) => {
      const reason = e instanceof DownloadRefused ? e.reason : "download-failed";
      const message = e instanceof Error ? e.message : String(e);
      this.#failed.set(src.sha256, { at: this.#clock.monotonic(), reason, message });
      this.#o.log?.warn({ sha256: src.sha256, reason, err: message }, "snapshot download failed");
    }).finally(() => {
      this.#inflight.delete(src.sha256);
      this.#o.onSettled?.();
    });
    this.#inflight.set(src.sha256, p);
    return { state: "downloading" };
  }

  /** Waits for the download of `sha256` to end, if one runs (tests, shutdown). */
  async settled(sha256: string): Promise<void> {
    await this.#inflight.get(sha256);
  }

  async #download(src: SnapshotSource): Promise<void> {
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.dir}/.partial-${src.sha256}-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const max = src.sizeBytes > 0 ? src.sizeBytes : (this.#o.maxBytes ?? 1024 ** 4);
      const got = await httpsDownload(src.url, tmp, {
        fetch: this.#o.fetch ?? fetch,
        maxBytes: max,
        what: "snapshot",
        clock: this.#clock,
        ...(this.#o.limits ? { limits: this.#o.limits } : {}),
      });
      if (got !== src.sha256) {
        throw new DownloadRefused("digest-mismatch", `snapshot from ${src.url} has SHA-256 ${got}, not ${src.sha256}`);
      }
      await Deno.rename(tmp, this.path(src.sha256));
      this.#ready.add(src.sha256);
      this.#o.log?.info({ sha256: src.sha256 }, "snapshot downloaded and verified");
    } finally {
      await Deno.remove(tmp).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
  }

  async prune(keep: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    try {
      for await (const e of Deno.readDir(this.dir)) {
        const m = /^([0-9a-f]{64})\.tar$/.exec(e.name);
        if (!m || keep.has(m[1]!) || this.#inflight.has(m[1]!)) continue;
        await Deno.remove(`${this.dir}/${e.name}`);
        this.#ready.delete(m[1]!);
        removed.push(m[1]!);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    for (const k of this.#failed.keys()) if (!keep.has(k)) this.#failed.delete(k);
    return removed.sort();
  }
}
