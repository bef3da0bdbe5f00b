/**
 * Base images of the `libvirt-kvm` runtime (seed 000 §Tenant images): downloaded once over https only (a redirect is
 * followed only to https, at most 5), hashed with SHA-256 while streaming, checked (a `qcow2` header against the
 * base-image policy; `raw` and `iso` never probed) and only then renamed into `images/<sha256>.<format>`, mode 0644
 * in a 0700 directory. Concurrent instances on one image wait on one download. A refusal is {@link ImageFetchRefused}
 * with a reason (`not-https`, `digest-mismatch`, `download-failed`, or the qcow2 check's); it leaves no file behind.
 *
 * @module
 */
import { checkImage, ImageRefused } from "../../core/images/mod.ts";
import type { ImageFormat } from "../../core/images/qcow2_header.ts";
import { DownloadRefused, httpsDownload } from "../host/https_download.ts";

/** A base image that cannot be used; `reason` is the seed's or the qcow2 check's. */
export class ImageFetchRefused extends Error {
  override name = "ImageFetchRefused";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Options of {@link ImageStore}. */
export interface ImageStoreOptions {
  /** `<data dir>/libvirt/images`. */
  readonly dir: string;
  /** The fetch to use (tests pass one that trusts their CA). */
  readonly fetch?: typeof fetch;
  /** The most bytes one image may have (default 256 GiB). */
  readonly maxBytes?: number;
}

/** The store. */
export class ImageStore {
  readonly dir: string;
  readonly #fetch: typeof fetch;
  readonly #max: number;
  readonly #inflight = new Map<string, Promise<string>>();

  constructor(opts: ImageStoreOptions) {
    this.dir = opts.dir;
    this.#fetch = opts.fetch ?? fetch;
    this.#max = opts.maxBytes ?? 256 * 1024 ** 3;
  }

  /** Where the image of `sha256` and `format` lives once verified. */
  path(sha256: string, format: ImageFormat): string {
    return `${this.dir}/${sha256}.${format}`;
  }

  /** The verified image's path, downloading it first when it is not there yet (one download per digest). */
  ensure(url: string, sha256: string, format: ImageFormat): Promise<string> {
    const key = `${sha256}.${format}`;
    const running = this.#inflight.get(key);
    if (running) return running;
    const p = this.#ensure(url, sha256, format).finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, p);
    return p;
  }

  async #ensure(url: string, sha256: string, format: ImageFormat): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) {
      throw new ImageFetchRefused("bad-digest", `image digest ${JSON.stringify(sha256)} is not a lowercase SHA-256`);
    }
    const final = this.path(sha256, format);
    try {
      const st = await Deno.lstat(final);
      if (st.isFile) return final;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.dir}/.partial-${sha256}.${format}-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const got = await this.#download(url, tmp);
      if (got !== sha256) {
        throw new ImageFetchRefused("digest-mismatch", `image from ${url} has SHA-256 ${got}, not ${sha256}`);
      }
      try {
        await checkImage(tmp, format);
      } catch (e) {
        if (e instanceof ImageRefused) {
          throw new ImageFetchRefused(e.reason, `image ${sha256}: ${e.message}`, { cause: e });
        }
        throw e;
      }
      await Deno.chmod(tmp, 0o644);
      await Deno.rename(tmp, final);
      return final;
    } finally {
      await Deno.remove(tmp).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
  }

  /** Streams `url` into `dest` (created 0600), returning the bytes' SHA-256. */
  async #download(url: string, dest: string): Promise<string> {
    try {
      return await httpsDownload(url, dest, { fetch: this.#fetch, maxBytes: this.#max, what: "image" });
    } catch (e) {
      if (e instanceof DownloadRefused) throw new ImageFetchRefused(e.reason, e.message, { cause: e });
      throw e;
    }
  }
}
