import assert from "node:assert/strict";
import { ConvergenceEngine } from "../../core/converge/engine.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { bootHttpHandler, imagePath } from "./boot_http.ts";
import { ImageCache } from "./image_cache.ts";
import { type Origin, originCerts, sha256Hex, startOrigin } from "./image_cache_testing.ts";
import { SiteConverger } from "./site_converger.ts";
import { leaseRoutes } from "./boot_routes.ts";
import { LeaseBook } from "./lease_book.ts";
import { bcd } from "../../proto/mod.ts";

const A = new TextEncoder().encode("image A\n".repeat(500));
const B = new TextEncoder().encode("image B\n".repeat(700));
const certs = await originCerts();
const why = certs === null ? "openssl is absent (the test origin's CA is made with it)" : undefined;
if (why) console.warn(`skipping site converger tests: ${why}`);

interface Rig {
  engine: ConvergenceEngine;
  conv: SiteConverger;
  cache: ImageCache;
  origin: Origin;
  wakes: () => number;
  site(
    generation: number,
    images: { url: string; sha256: string }[],
  ): Promise<{ state: string; reason: string; message: string }>;
}

async function withRig(fn: (r: Rig) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-site-conv-" });
  const origin = startOrigin({ "/a.raw": A, "/b.raw": B }, certs!);
  const cache = new ImageCache({ dir, caCerts: [origin.ca], log: silentLogger() });
  let wakes = 0;
  const conv = new SiteConverger({ cache, wake: () => wakes++ });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  try {
    await fn({
      engine,
      conv,
      cache,
      origin,
      wakes: () => wakes,
      async site(generation, images) {
        engine.hold({ generation, specHash: `h${generation}`, sections: { site: { cache_images: images } } });
        const s = (await engine.pass()).sections.find((x) => x.section === "site");
        assert(s, "a site status");
        return { state: s.state, reason: s.reason, message: s.message };
      },
    });
  } finally {
    await conv.idle();
    await origin.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "the site section is PROGRESSING while its images warm, wakes the loop when they land, then CONVERGED",
  ignore: why !== undefined,
  async fn() {
    await withRig(async (r) => {
      const images = [
        { url: `${r.origin.base}/a.raw`, sha256: sha256Hex(A) },
        { url: `${r.origin.base}/b.raw`, sha256: sha256Hex(B) },
      ];
      r.origin.hold();
      const first = await r.site(1, images);
      assert.deepEqual([first.state, first.reason], ["PROGRESSING", "images-warming"]);
      assert.match(first.message, /2 of 2 images warming/);
      assert.equal(r.engine.snapshot().observed_generation, 0, "a warming section holds observed_generation back");
      // A second pass while the origin still holds starts no second download of either image.
      const again = await r.site(1, images);
      assert.equal(again.state, "PROGRESSING");
      r.origin.release();
      await r.conv.idle();
      assert(r.wakes() >= 1, "the end of a download wakes the loop");
      const done = await r.site(1, images);
      assert.equal(done.state, "CONVERGED");
      assert.equal(r.engine.snapshot().observed_generation, 1);
      assert.deepEqual(r.origin.seen.sort(), ["/a.raw", "/b.raw"], "one download per image");
    });
  },
});

Deno.test({
  name: "an image whose bytes do not match its digest makes the section FAILED digest-mismatch and is never served",
  ignore: why !== undefined,
  async fn() {
    await withRig(async (r) => {
      const wrong = sha256Hex("not these bytes");
      const images = [
        { url: `${r.origin.base}/a.raw`, sha256: sha256Hex(A) },
        { url: `${r.origin.base}/b.raw`, sha256: wrong },
      ];
      await r.site(1, images);
      await r.conv.idle();
      const s = await r.site(1, images);
      assert.deepEqual([s.state, s.reason], ["FAILED", "digest-mismatch"]);
      assert.match(s.message, new RegExp(`b\\.raw has SHA-256 ${sha256Hex(B)}, not ${wrong}`));
      assert.equal(r.engine.snapshot().observed_generation, 1, "a terminal failure lets the generation advance");
      const h = bootHttpHandler({ cache: r.cache, log: silentLogger() });
      const bad = await h(new Request(`http://boot.test${imagePath(wrong)}`));
      assert.equal(bad.status, 404);
      await bad.body?.cancel();
      const good = await h(new Request(`http://boot.test${imagePath(sha256Hex(A))}`));
      assert.equal(good.status, 200, "the image that matched is served");
      await good.body?.cancel();
      // The failure is terminal at this generation: another pass does not download again.
      const seen = r.origin.seen.length;
      assert.equal((await r.site(1, images)).state, "FAILED");
      await r.conv.idle();
      assert.equal(r.origin.seen.length, seen);
      // A newer generation tries it again (the origin may have been fixed).
      await r.site(2, images);
      await r.conv.idle();
      assert.equal(r.origin.seen.length, seen + 1);
    });
  },
});

Deno.test({
  name: "a cache entry that is not an https URL with a lowercase SHA-256 fails the section invalid-cache-image",
  ignore: why !== undefined,
  async fn() {
    await withRig(async (r) => {
      for (
        const bad of [
          { url: `http://127.0.0.1:1/a.raw`, sha256: sha256Hex(A) },
          { url: `${r.origin.base}/a.raw`, sha256: sha256Hex(A).toUpperCase() },
          { url: `${r.origin.base}/a.raw`, sha256: "abc" },
        ]
      ) {
        const s = await r.site(1, [bad]);
        assert.deepEqual([s.state, s.reason], ["FAILED", "invalid-cache-image"], JSON.stringify(bad));
      }
      assert.deepEqual(r.origin.seen, [], "nothing was downloaded");
    });
  },
});

Deno.test({
  name: "a download that fails keeps the section PROGRESSING with the reason, and a later pass retries it",
  ignore: why !== undefined,
  async fn() {
    await withRig(async (r) => {
      const images = [{ url: `${r.origin.base}/missing.raw`, sha256: sha256Hex(A) }];
      await r.site(1, images);
      await r.conv.idle();
      const s = await r.site(1, images);
      assert.deepEqual([s.state, s.reason], ["PROGRESSING", "download-failed"]);
      assert.match(s.message, /HTTP 404/);
      await r.conv.idle();
      assert.equal(r.origin.seen.length, 2, "the second pass downloaded again");
    });
  },
});

Deno.test({
  name: "the spec's RAMDISK boot leases reach the boot server once their kernel and initrd are cached; LOCAL is none",
  ignore: why !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-site-leases-" });
    const origin = startOrigin({ "/a.raw": A, "/b.raw": B }, certs!);
    const cache = new ImageCache({ dir, caCerts: [origin.ca], log: silentLogger() });
    const leases = new LeaseBook(dir, () => 1000);
    const conv = new SiteConverger({ cache, leases, wake: () => {} });
    const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
    const http = bootHttpHandler({
      cache,
      boot: leaseRoutes({ leases, cache, baseUrl: () => "http://boot.test", log: silentLogger() }),
      log: silentLogger(),
    });
    const Mode = bcd.v1.BootLease.Mode;
    const lease = (node_id: string, mode: number, extra: Record<string, unknown> = {}) => ({
      node_id,
      mode,
      macs: ["52:54:00:aa:bb:01"],
      kernel_url: `${origin.base}/a.raw`,
      kernel_sha256: sha256Hex(A),
      initrd_url: `${origin.base}/b.raw`,
      initrd_sha256: sha256Hex(B),
      cmdline: "console=ttyS0",
      expires_at_ms: 5000,
      ...extra,
    });
    const pass = async (generation: number, boot_leases: unknown[]) => {
      engine.hold({ generation, specHash: `h${generation}`, sections: { site: { boot_leases } } });
      return (await engine.pass()).sections.find((x) => x.section === "site")!;
    };
    const script = async (mac: string) => {
      const r = await http(new Request(`http://boot.test/boot/ipxe?mac=${mac}`));
      return r.status === 200 ? await r.text() : (await r.body?.cancel(), r.status);
    };
    try {
      origin.hold();
      const warming = await pass(1, [lease("m1", Mode.RAMDISK)]);
      assert.deepEqual([warming.state, warming.reason], ["PROGRESSING", "images-warming"]);
      assert.equal(await script("52:54:00:aa:bb:01"), 404, "no lease while its kernel and initrd warm");
      origin.release();
      await conv.idle();
      assert.equal((await pass(1, [lease("m1", Mode.RAMDISK)])).state, "CONVERGED");
      assert.match(String(await script("52:54:00:aa:bb:01")), /^#!ipxe\nkernel http:\/\/boot\.test\/images\/sha256\//);
      assert.equal((await pass(1, [lease("m1", Mode.RAMDISK)])).state, "CONVERGED", "nothing left to do");
      // The next spec makes m1 LOCAL: its lease goes, the machine gets nothing.
      assert.equal((await pass(2, [lease("m1", Mode.LOCAL)])).state, "CONVERGED");
      assert.equal(await script("52:54:00:aa:bb:01"), 404);
      assert.deepEqual(await leases.list(), []);
      for (
        const bad of [
          lease("m2", Mode.RAMDISK, { macs: [] }),
          lease("m2", Mode.RAMDISK, { macs: ["nope"] }),
          lease("m2", Mode.RAMDISK, { kernel_url: "http://127.0.0.1/k" }),
          lease("m2", Mode.RAMDISK, { cmdline: "a\nb" }),
          lease("../m2", Mode.RAMDISK),
        ]
      ) {
        const s = await pass(3, [bad]);
        assert.deepEqual([s.state, s.reason], ["FAILED", "invalid-boot-lease"], JSON.stringify(bad));
      }
    } finally {
      await conv.idle();
      await origin.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
