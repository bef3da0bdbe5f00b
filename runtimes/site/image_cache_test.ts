import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { bootHttpHandler, imagePath } from "./boot_http.ts";
import { DownloadRefused, ImageCache, ImageDigestMismatch } from "./image_cache.ts";
import { type Origin, originCerts, sha256Hex, startOrigin } from "./image_cache_testing.ts";

const IMAGE = new TextEncoder().encode("a bcd cache image\n".repeat(1000));
const SHA = sha256Hex(IMAGE);
const certs = await originCerts();
const why = certs === null ? "openssl is absent (the test origin's CA is made with it)" : undefined;
if (why) console.warn(`skipping image cache tests: ${why}`);

async function withCache(fn: (cache: ImageCache, dir: string, o: Origin) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-image-cache-" });
  const origin = startOrigin({ "/img.raw": IMAGE, "/other.raw": new TextEncoder().encode("other bytes") }, certs!);
  try {
    await fn(new ImageCache({ dir, caCerts: [origin.ca], log: silentLogger() }), dir, origin);
  } finally {
    await origin.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

const get = (h: (r: Request) => Promise<Response>, path: string, method = "GET") =>
  h(new Request(`http://boot.test${path}`, { method }));

Deno.test({
  name: "an image downloaded over https with its digest is stored by digest and served by the boot server",
  ignore: why !== undefined,
  async fn() {
    await withCache(async (cache, dir, o) => {
      await cache.warm(`${o.base}/img.raw`, SHA);
      assert.deepEqual([...await cache.digests()], [SHA]);
      assert.deepEqual(await Deno.readFile(`${dir}/sha256/${SHA}`), IMAGE);
      assert.deepEqual([...Deno.readDirSync(`${dir}/tmp`)], [], "no temporary file left");
      const h = bootHttpHandler({ cache, log: silentLogger() });
      const r = await get(h, imagePath(SHA));
      assert.equal(r.status, 200);
      assert.deepEqual(new Uint8Array(await r.arrayBuffer()), IMAGE);
      const head = await get(h, imagePath(SHA), "HEAD");
      assert.equal(head.headers.get("content-length"), String(IMAGE.length));
      assert.equal((await get(h, imagePath(SHA), "POST")).status, 405);
      assert.equal((await get(h, imagePath("0".repeat(64)))).status, 404);
      // A second warm of a held digest asks the origin nothing.
      const asked = o.seen.length;
      await cache.warm(`${o.base}/img.raw`, SHA);
      assert.equal(o.seen.length, asked);
    });
  },
});

Deno.test({
  name: "an image whose bytes are not its digest is refused digest-mismatch, nothing kept, never served",
  ignore: why !== undefined,
  async fn() {
    await withCache(async (cache, dir, o) => {
      const err = await cache.warm(`${o.base}/other.raw`, SHA).then(() => undefined, (e) => e);
      assert(err instanceof ImageDigestMismatch, String(err));
      assert.equal(err.reason, "digest-mismatch");
      assert.match(err.message, new RegExp(`not ${SHA}`));
      assert.deepEqual([...await cache.digests()], []);
      assert.deepEqual([...Deno.readDirSync(`${dir}/tmp`)], []);
      const r = await get(bootHttpHandler({ cache, log: silentLogger() }), imagePath(SHA));
      assert.equal(r.status, 404);
      await r.body?.cancel();
    });
  },
});

Deno.test({
  name: "a cached image changed on disk is re-verified before the serve: removed and answered 404",
  ignore: why !== undefined,
  async fn() {
    await withCache(async (cache, dir, o) => {
      await cache.warm(`${o.base}/img.raw`, SHA);
      const f = await Deno.open(`${dir}/sha256/${SHA}`, { write: true });
      await f.write(new TextEncoder().encode("X"));
      f.close();
      const r = await get(bootHttpHandler({ cache, log: silentLogger() }), imagePath(SHA));
      assert.equal(r.status, 404);
      await r.body?.cancel();
      assert.equal(await cache.has(SHA), false, "the bad file is removed");
    });
  },
});

Deno.test({
  name: "the cache downloads https only and refuses a plain http URL not-https",
  ignore: why !== undefined,
  async fn() {
    await withCache(async (cache) => {
      const err = await cache.warm("http://127.0.0.1:9/img.raw", SHA).then(() => undefined, (e) => e);
      assert(err instanceof DownloadRefused && err.reason === "not-https", String(err));
    });
  },
});

Deno.test({
  name: "what a crash left in the cache's tmp/ is removed before the first download of a new process",
  ignore: why !== undefined,
  async fn() {
    await withCache(async (cache, dir, o) => {
      await Deno.mkdir(`${dir}/tmp/iso-left`, { recursive: true });
      await Deno.writeTextFile(`${dir}/tmp/${SHA}.partial`, "half");
      await cache.warm(`${o.base}/img.raw`, SHA);
      assert.deepEqual([...Deno.readDirSync(`${dir}/tmp`)], []);
      assert.deepEqual([...await cache.digests()], [SHA]);
    });
  },
});
