/**
 * The site's image cache (000 §NodeSpec `site`: `cache_images`, "the agent re-verifies each digest before serving
 * it"). Images are downloaded over https (`runtimes/host/https_download.ts`: https only, redirects only to https,
 * a size bound), hashed with SHA-256 while they stream into a private temporary file, and kept only when the digest is
 * the one asked for: then the file is renamed to `<dir>/sha256/<hex>` (one file per digest, whatever URL it came
 * from). A mismatch removes the temporary file and throws {@link ImageDigestMismatch}; nothing of it is ever served.
 *
 * {@link ImageCache.open} re-verifies before every serve: it opens the stored file once, hashes it through that handle,
 * and hands back the same handle rewound, so the bytes served are the inode that was just hashed (a file swapped in by
 * rename afterwards is not what is served). A stored file whose bytes no longer match its name is removed and
 * `open` answers `undefined` — the caller serves nothing (404).
 *
 * Leftovers of an earlier process in `tmp/` (a download or an ISO build cut short) are removed once, before this
 * process writes there.
 *
 * Judgement calls: images no longer in the spec are kept (a `bmc.firmware` or a lease may still name them); the cache
 * directory is the agent's own (`<data dir>/image-cache`), so no helper op is involved.
 *
 * @module
 */
import { DownloadRefused, httpsDownload } from "../host/https_download.ts";
import type { Logger } from "../../core/log/mod.ts";

/** A downloaded image whose SHA-256 is not the one asked for; `reason` is `digest-mismatch`. */
export class ImageDigestMismatch extends Error {
  override name = "ImageDigestMismatch";
  readonly reason = "digest-mismatch";
  constructor(readonly url: string, readonly want: string, readonly got: string) {
    super(`${url} has SHA-256 ${got}, not ${want}; the image is not kept and never served`);
  }
}

export { DownloadRefused };

/** Whether `s` is a SHA-256 in lowercase hex. */
export function isSha256(s: string): boolean {
  return /^[0-9a-f]{64}$/.test(s);
}

/** Options of {@link ImageCache}. */
export interface ImageCacheOptions {
  /** The cache's directory (created when absent). */
  readonly dir: string;
  /** Extra CAs for the downloads (tests, private mirrors); the system roots otherwise. */
  readonly caCerts?: readonly string[];
  /** The largest image kept (default 64 GiB). */
  readonly maxBytes?: number;
  readonly log: Logger;
}

/** The site's image cache: images stored by digest, verified on the way in and before every serve. */
export class ImageCache {
  readonly #o: ImageCacheOptions;
  readonly #inflight = new Map<string, Promise<void>>();
  #swept: Promise<void> | undefined;

  constructor(o: ImageCacheOptions) {
    this.#o = o;
  }

  /** Where the image of digest `sha256` is stored. */
  path(sha256: string): string {
    if (!isSha256(sha256)) throw new TypeError(`${JSON.stringify(sha256.slice(0, 80))} is not a lowercase SHA-256`);
    return `${this.#o.dir}/sha256/${sha256}`;
  }

  /** The digests stored now (not re-verified: {@link open} does that). */
  async digests(): Promise<Set<string>> {
    const out = new Set<string>();
    try {
      for await (const e of Deno.readDir(`${this.#o.dir}/sha256`)) if (e.isFile && isSha256(e.name)) out.add(e.name);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out;
  }

  /** Whether an image of digest `sha256` is stored (not re-verified). */
  async has(sha256: string): Promise<boolean> {
    try {
      return (await Deno.stat(this.path(sha256))).isFile;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
  }

  /**
   * Downloads `url` into the cache unless its digest is stored; concurrent calls for one digest share the download.
   * Throws {@link ImageDigestMismatch} (nothing kept) or {@link DownloadRefused} (`not-https`, `download-failed`,
   * `too-large`).
   */
  warm(url: string, sha256: string): Promise<void> {
    const want = sha256.toLowerCase();
    const path = this.path(want);
    const running = this.#inflight.get(want);
    if (running) return running;
    const p = this.#download(url, want, path).finally(() => this.#inflight.delete(want));
    this.#inflight.set(want, p);
    return p;
  }

  /**
   * Removes what an earlier process left in `tmp/` (a download or an ISO cut short by a crash), once per process,
   * before this process puts anything there.
   */
  #sweep(): Promise<void> {
    this.#swept ??= (async () => {
      const tmp = `${this.#o.dir}/tmp`;
      try {
        for await (const e of Deno.readDir(tmp)) await Deno.remove(`${tmp}/${e.name}`, { recursive: true });
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
      await Deno.mkdir(`${this.#o.dir}/sha256`, { recursive: true, mode: 0o700 });
      await Deno.mkdir(tmp, { recursive: true, mode: 0o700 });
    })();
    return this.#swept;
  }

  async #download(url: string, want: string, path: string): Promise<void> {
    await this.#sweep();
    if (await this.has(want)) return;
    const tmp = `${this.#o.dir}/tmp/${want}.${crypto.randomUUID()}`;
    const client = this.#o.caCerts ? Deno.createHttpClient({ caCerts: [...this.#o.caCerts] }) : undefined;
    try {
      const got = await httpsDownload(url, tmp, {
        fetch: (u, init) => fetch(u, { ...init, ...(client ? { client } : {}) }),
        maxBytes: this.#o.maxBytes ?? 64 * 1024 ** 3,
        what: "cache image",
      });
      if (got !== want) throw new ImageDigestMismatch(url, want, got);
      await Deno.rename(tmp, path);
      this.#o.log.info({ url, sha256: want }, "image cached");
    } finally {
      client?.close();
      await _removeIfThere(tmp);
    }
  }

  /**
   * Moves a file the agent made (an ISO it built, on the cache's filesystem) into the cache under its SHA-256 and
   * answers the digest; the file is gone from `path` afterwards.
   */
  async adopt(path: string): Promise<string> {
    // node:crypto for its incremental hash, loaded here, not at the agent's start (issue 24).
    const { createHash } = await import("node:crypto");
    const h = createHash("sha256");
    const f = await Deno.open(path, { read: true });
    try {
      await f.sync();
      for await (const chunk of f.readable) h.update(chunk);
    } catch (e) {
      f.close();
      throw e;
    }
    const sha = h.digest("hex");
    await Deno.mkdir(`${this.#o.dir}/sha256`, { recursive: true, mode: 0o700 });
    await Deno.rename(path, this.path(sha));
    return sha;
  }

  /**
   * Opens the stored image of `sha256` for serving after hashing it again through the same handle: the handle comes
   * back rewound with the size, or `undefined` when nothing is stored or the bytes no longer match (then the file is
   * removed and the event logged). The caller closes the handle.
   */
  async open(sha256: string): Promise<{ file: Deno.FsFile; size: number } | undefined> {
    if (!isSha256(sha256)) return undefined;
    const path = this.path(sha256);
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
    let keep = false;
    try {
      const { createHash } = await import("node:crypto"); // see adopt
      const h = createHash("sha256");
      const buf = new Uint8Array(1 << 20);
      let size = 0;
      for (;;) {
        const n = await file.read(buf);
        if (n === null) break;
        h.update(buf.subarray(0, n));
        size += n;
      }
      const got = h.digest("hex");
      if (got !== sha256) {
        this.#o.log.error({ sha256, got, path }, "a cached image no longer matches its digest; removed, not served");
        await _removeIfThere(path);
        return undefined;
      }
      await file.seek(0, Deno.SeekMode.Start);
      keep = true;
      return { file, size };
    } finally {
      if (!keep) file.close();
    }
  }
}

async function _removeIfThere(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}
