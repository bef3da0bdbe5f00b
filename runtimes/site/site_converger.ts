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
 * - `boot_leases` (the lease state the boot server obeys): each `RAMDISK` lease's kernel and initrd are warmed like
 *   the cache images, and once they are all held the spec's leases replace the book's earlier spec leases
 *   (`boot-leases.json`, `source: "spec"`); the boot server then answers those machines' iPXE scripts until
 *   `expires_at_ms`. A `LOCAL` lease is no lease: the machine gets nothing from the boot server and boots its disk. A
 *   spec lease gets no ISO (virtual media goes through `boot.prepareRamdisk`). A lease without a node id, a MAC or
 *   system UUID, with a bad MAC, UUID, URL, digest or command line fails the section `invalid-boot-lease`.
 * - `proxy_targets` need nothing on the host (`site.httpProxy` reads them from the held spec).
 *
 * @module
 */
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../../core/converge/engine.ts";
import type { bcd } from "../../proto/mod.ts";
import { bcd as pb } from "../../proto/mod.ts";
import { DownloadRefused, ImageDigestMismatch, isSha256 } from "./image_cache.ts";
import { type BootLeaseRecord, isLeaseNodeId, type LeaseBook, normalizeMac, normalizeSystemId } from "./lease_book.ts";
import { checkCmdline } from "./ramdisk_iso.ts";

type SiteSection = bcd.v1.SiteSection.$Properties;

/** What the converger needs of the cache. */
export interface CachePort {
  digests(): Promise<Set<string>>;
  warm(url: string, sha256: string): Promise<void>;
}

/** One image to warm. */
export interface WarmAction {
  readonly kind: "warm";
  readonly url: string;
  readonly sha256: string;
}

/** Replace the book's spec leases with the spec's. */
export interface LeasesAction {
  readonly kind: "leases";
  readonly leases: readonly BootLeaseRecord[];
}

/** What a pass does. */
export type SiteAction = WarmAction | LeasesAction;

/** What the converger reads: the digests held, and the book's spec leases (canonical JSON). */
export interface SiteObserved {
  readonly digests: Set<string>;
  readonly specLeases: string;
}

interface _Failure {
  readonly generation: number;
  readonly reason: string;
  readonly message: string;
  readonly terminal: boolean;
}

/** The section's content checked: the images to hold and the spec's leases, or why it is refused. */
type _Desired =
  | { ok: true; images: { url: string; sha256: string }[]; leases: BootLeaseRecord[] }
  | { ok: false; reason: string; message: string };

/** The `site` section's converger. */
export class SiteConverger implements SectionConverger<SiteSection, SiteObserved, SiteAction> {
  readonly section = "site" as const;
  readonly #cache: CachePort;
  readonly #leases: Pick<LeaseBook, "list" | "replaceFromSpec"> | undefined;
  readonly #wake: () => void;
  readonly #inflight = new Map<string, Promise<void>>();
  readonly #failures = new Map<string, _Failure>();
  #generation = 0;

  constructor(o: { cache: CachePort; wake: () => void; leases?: Pick<LeaseBook, "list" | "replaceFromSpec"> }) {
    this.#cache = o.cache;
    this.#wake = o.wake;
    this.#leases = o.leases;
  }

  /** Resolves when no download is running (tests). */
  async idle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.values()]);
  }

  async observe(_ctx: ApplyContext): Promise<SiteObserved> {
    const held = (await this.#leases?.list() ?? []).filter((l) => l.source === "spec");
    return { digests: await this.#cache.digests(), specLeases: _canonical(held) };
  }

  plan(desired: SiteSection | undefined, observed: SiteObserved): readonly SiteAction[] {
    const d = _desired(desired);
    // A refused section still plans one action, so apply reports the refusal.
    if (!d.ok) return [{ kind: "leases", leases: [] }];
    const warm: SiteAction[] = d.images.filter((i) => !observed.digests.has(i.sha256))
      .map((i) => ({ kind: "warm", ...i }));
    // The leases go to the boot server once their kernels and initrds are held, whatever other images still warm.
    const ready = d.leases.every((l) => observed.digests.has(l.kernel_sha256) && observed.digests.has(l.initrd_sha256));
    const leases: SiteAction[] = ready && _canonical(d.leases) !== observed.specLeases
      ? [{ kind: "leases", leases: d.leases }]
      : [];
    return [...warm, ...leases];
  }

  async apply(
    actions: readonly SiteAction[],
    desired: SiteSection | undefined,
    ctx: ApplyContext,
  ): Promise<ApplyOutcome> {
    if (ctx.generation !== this.#generation) {
      this.#generation = ctx.generation;
      // A newer spec tries again what failed under an older one.
      for (const [k, f] of this.#failures) if (f.generation < ctx.generation) this.#failures.delete(k);
    }
    const d = _desired(desired);
    if (!d.ok) return { kind: "failed", reason: d.reason, message: d.message };
    const warm = actions.filter((a): a is WarmAction => a.kind === "warm");
    for (const a of actions) {
      if (a.kind === "leases") {
        await this.#leases?.replaceFromSpec(a.leases);
        ctx.log.info({ leases: a.leases.length }, "the spec's boot leases are the boot server's");
      }
    }
    for (const a of warm) this.#start(a, ctx);
    const bad = warm.map((a) => this.#failures.get(_key(a))).filter((f) => f?.terminal);
    if (bad.length > 0) {
      return {
        kind: "failed",
        reason: bad[0]!.reason,
        message: bad.map((f) => f!.message).join("; "),
      };
    }
    if (warm.length === 0) return { kind: "converged" };
    const retry = warm.map((a) => this.#failures.get(_key(a))).find((f) => f && !f.terminal);
    return {
      kind: "progressing",
      reason: retry?.reason ?? "images-warming",
      message: `${warm.length} of ${d.images.length} images warming: ` + warm.map((a) => a.url).join(", ") +
        (retry ? `; last error: ${retry.message}` : ""),
    };
  }

  #start(a: WarmAction, ctx: ApplyContext): void {
    const k = _key(a);
    if (this.#inflight.has(k) || this.#failures.get(k)?.terminal) return;
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
}

function _key(a: { url: string; sha256: string }): string {
  return `${a.sha256} ${a.url}`;
}

function _canonical(leases: readonly BootLeaseRecord[]): string {
  return JSON.stringify(
    [...leases].sort((a, b) => a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0).map((l) => ({
      ...l,
      source: "spec",
    })),
  );
}

function _desired(desired: SiteSection | undefined): _Desired {
  const images: { url: string; sha256: string }[] = [];
  const image = (what: string, url: string, sha256: string): string | undefined => {
    if (!url.startsWith("https://") || !isSha256(sha256)) {
      return `${what} ${JSON.stringify(url.slice(0, 200))} with sha256 ${JSON.stringify(sha256.slice(0, 80))}: ` +
        "an https URL and a lowercase hex SHA-256 are required";
    }
    if (!images.some((i) => i.sha256 === sha256 && i.url === url)) images.push({ url, sha256 });
    return undefined;
  };
  for (const i of desired?.cache_images ?? []) {
    const bad = image("cache image", i.url ?? "", i.sha256 ?? "");
    if (bad) return { ok: false, reason: "invalid-cache-image", message: bad };
  }
  const leases: BootLeaseRecord[] = [];
  for (const l of desired?.boot_leases ?? []) {
    if ((l.mode ?? pb.v1.BootLease.Mode.LOCAL) !== pb.v1.BootLease.Mode.RAMDISK) continue;
    const refuse = (why: string): _Desired => ({
      ok: false,
      reason: "invalid-boot-lease",
      message: `boot lease of ${JSON.stringify((l.node_id ?? "").slice(0, 140))}: ${why}`,
    });
    const nodeId = l.node_id ?? "";
    if (!isLeaseNodeId(nodeId)) return refuse("not a node id");
    const macs = (l.macs ?? []).map(normalizeMac);
    const ids = (l.system_ids ?? []).map(normalizeSystemId);
    if (macs.includes(undefined) || ids.includes(undefined)) return refuse("a MAC or system UUID that is not one");
    if (macs.length + ids.length === 0) return refuse("it names no MAC and no system UUID");
    const cmdline = l.cmdline ?? "";
    const badCmd = checkCmdline(cmdline);
    if (badCmd) return refuse(badCmd);
    const badImage = image("kernel", l.kernel_url ?? "", l.kernel_sha256 ?? "") ??
      image("initrd", l.initrd_url ?? "", l.initrd_sha256 ?? "");
    if (badImage) return refuse(badImage);
    leases.push({
      node_id: nodeId,
      macs: macs as string[],
      system_ids: ids as string[],
      kernel_sha256: l.kernel_sha256!,
      initrd_sha256: l.initrd_sha256!,
      cmdline,
      expires_at_ms: Number(l.expires_at_ms ?? 0),
      source: "spec",
    });
  }
  return { ok: true, images, leases };
}
