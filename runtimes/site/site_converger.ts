/**
 * The `site` section's converger on `bcd site` (000 §Convergence: "the boot lease the boot server obeys, and the
 * `cache_images` the site agent pulls into its image cache: the section stays `PROGRESSING` while images warm and
 * `FAILED` for an image whose bytes do not match its digest").
 *
 * - observe: the digests the cache holds; plan: the `cache_images` not held.
 * - apply: each missing image is downloaded in the background (one download per digest); the pass does not wait for
 *   it. While any is missing the section is `PROGRESSING` (`images-warming`, the count and the URLs); the end of a
 *   download wakes the loop, so the next pass reports at once.
 * - An image whose bytes do not match its digest is `FAILED` (`digest-mismatch`, URL and both digests): terminal at
 *   this generation, nothing kept, never served; a newer generation tries it again. A download that fails otherwise
 *   (`download-failed`, `too-large`) keeps the section `PROGRESSING` with that reason, and the next pass retries.
 * - An entry that is not an https URL with a lowercase SHA-256 fails the section `invalid-cache-image`.
 * - `proxy_targets` need nothing on the host (`site.httpProxy` reads them from the held spec).
 *
 * @module
 */
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../../core/converge/engine.ts";
import type { bcd } from "../../proto/mod.ts";
import { DownloadRefused, ImageDigestMismatch, isSha256 } from "./image_cache.ts";

type SiteSection = bcd.v1.SiteSection.$Properties;

/** What the converger needs of the cache. */
export interface CachePort {
  digests(): Promise<Set<string>>;
  warm(url: string, sha256: string): Promise<void>;
}

/** One image to warm. */
export interface WarmAction {
  readonly url: string;
  readonly sha256: string;
}

interface _Failure {
  readonly generation: number;
  readonly reason: string;
  readonly message: string;
  readonly terminal: boolean;
}

/** The `site` section's converger. */
export class SiteConverger implements SectionConverger<SiteSection, Set<string>, WarmAction> {
  readonly section = "site" as const;
  readonly #cache: CachePort;
  readonly #wake: () => void;
  readonly #inflight = new Map<string, Promise<void>>();
  readonly #failures = new Map<string, _Failure>();
  #generation = 0;

  constructor(o: { cache: CachePort; wake: () => void }) {
    this.#cache = o.cache;
    this.#wake = o.wake;
  }

  /** Resolves when no download is running (tests). */
  async idle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.values()]);
  }

  observe(_ctx: ApplyContext): Promise<Set<string>> {
    return this.#cache.digests();
  }

  plan(desired: SiteSection | undefined, observed: Set<string>): readonly WarmAction[] {
    return (desired?.cache_images ?? [])
      .filter((i) => !observed.has(i.sha256 ?? ""))
      .map((i) => ({ url: i.url ?? "", sha256: i.sha256 ?? "" }));
  }

  apply(actions: readonly WarmAction[], desired: SiteSection | undefined, ctx: ApplyContext): Promise<ApplyOutcome> {
    if (ctx.generation !== this.#generation) {
      this.#generation = ctx.generation;
      // A newer spec tries again what failed under an older one.
      for (const [k, f] of this.#failures) if (f.generation < ctx.generation) this.#failures.delete(k);
    }
    for (const i of desired?.cache_images ?? []) {
      const url = i.url ?? "";
      const sha = i.sha256 ?? "";
      if (!url.startsWith("https://") || !isSha256(sha)) {
        return _failed(
          "invalid-cache-image",
          `cache image ${JSON.stringify(url.slice(0, 200))} with sha256 ${JSON.stringify(sha.slice(0, 80))}: ` +
            "an https URL and a lowercase hex SHA-256 are required",
        );
      }
    }
    for (const a of actions) {
      const k = _key(a);
      if (this.#inflight.has(k) || this.#failures.get(k)?.terminal) continue;
      const generation = ctx.generation;
      const p = this.#cache.warm(a.url, a.sha256).then(
        () => void this.#failures.delete(k),
        (e) => {
          if (e instanceof ImageDigestMismatch) {
            this.#failures.set(k, { generation, reason: e.reason, message: e.message, terminal: true });
          } else if (e instanceof DownloadRefused) {
            this.#failures.set(k, { generation, reason: e.reason, message: e.message, terminal: false });
          } else {
            this.#failures.set(k, { generation, reason: "cache-error", message: String(e), terminal: false });
            ctx.log.error({ err: e, url: a.url }, "image cache failed");
          }
        },
      ).finally(() => {
        this.#inflight.delete(k);
        this.#wake();
      });
      this.#inflight.set(k, p);
    }
    const bad = actions.map((a) => this.#failures.get(_key(a))).filter((f) => f?.terminal);
    if (bad.length > 0) return _failed(bad[0]!.reason, bad.map((f) => f!.message).join("; "));
    const retry = actions.map((a) => this.#failures.get(_key(a))).find((f) => f && !f.terminal);
    return Promise.resolve({
      kind: "progressing",
      reason: retry?.reason ?? "images-warming",
      message: `${actions.length} of ${desired?.cache_images?.length ?? 0} images warming: ` +
        actions.map((a) => a.url).join(", ") + (retry ? `; last error: ${retry.message}` : ""),
    });
  }
}

function _key(a: WarmAction): string {
  return `${a.sha256} ${a.url}`;
}

function _failed(reason: string, message: string): Promise<ApplyOutcome> {
  return Promise.resolve({ kind: "failed", reason, message });
}
