/**
 * `bmc.firmware` pushing the site's cached image to the fake BMC (`fixtures/redfish/fake_bmc.ts`) over TLS pinned by
 * the leaf: multipart to `MultipartHttpPushUri`, raw to the legacy `HttpPushUri` after its targets are set, the choice
 * of transfer, and an image whose bytes change on disk never reaching the BMC whole.
 */
import assert from "node:assert/strict";
import { CommandFailed } from "../../core/commands/rejection.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { bcd, unpackResult } from "../../proto/mod.ts";
import { FakeBmc, type FakeBmcOptions, MULTIPART_PUSH_URI } from "../../fixtures/redfish/fake_bmc.ts";
import { BmcHostBook } from "../redfish/bmc_hosts.ts";
import { bmcFirmwareHandler, type FirmwareCache } from "../redfish/kinds/bmc_firmware.ts";
import { bmcContext, MapSecrets, pemSha256, steppingClock } from "../redfish/redfish_testing.ts";
import { firmwareCache } from "./firmware_cache.ts";
import { ImageCache } from "./image_cache.ts";
import { type Origin, originCerts, sha256Hex, startOrigin } from "./image_cache_testing.ts";

const certs = await originCerts();
const why = certs === null
  ? "openssl is absent (the origin's and the fake BMC's certificates are made with it)"
  : undefined;
if (why) console.warn(`skipping bmc.firmware's HTTP push: ${why}`);

const Transfer = bcd.v1.BmcFirmwarePayload.Transfer;
const BMC_ENTRY = "/redfish/v1/UpdateService/FirmwareInventory/BMC";
// Three read chunks at least (FsFile.readable reads 64 KiB at a time): a cut push has sent some of the image.
const IMAGE = new TextEncoder().encode("firmware image v2, pushed\n".repeat(10_000));
const SHA = sha256Hex(IMAGE);

interface Rig {
  bmc: FakeBmc;
  cache: ImageCache;
  origin: Origin;
  run(p: { transfer?: number; cache?: FirmwareCache | null }): Promise<bcd.v1.IBmcFirmwareResult>;
}

async function rig(o: FakeBmcOptions): Promise<Rig & AsyncDisposable> {
  const origin = startOrigin({ "/fw.bin": IMAGE }, certs!);
  const dir = await Deno.makeTempDir({ prefix: "bcd-fw-push-" });
  const cache = new ImageCache({ dir: `${dir}/cache`, caCerts: [origin.ca], log: silentLogger() });
  const bmc = await FakeBmc.start({ tls: { cert: certs!.cert, key: certs!.key }, taskPolls: 1, ...o });
  const target = {
    host: "127.0.0.1",
    port: bmc.port,
    credential_ref: "cred/admin",
    cert_sha256: pemSha256(certs!.cert),
  };
  return {
    bmc,
    cache,
    origin,
    async run(p) {
      const use = p.cache === null ? undefined : p.cache ?? firmwareCache(cache, undefined);
      const handler = bmcFirmwareHandler({
        secrets: new MapSecrets().put("cred/admin", "Administrator", "secret"),
        hosts: new BmcHostBook(dir),
        clock: steppingClock(),
        firmware: { pollMs: 1000, imageCaCerts: [origin.ca], ...(use ? { cache: use } : {}) },
      });
      const { ctx } = bmcContext("bmc.firmware", {
        target,
        image_url: `${origin.base}/fw.bin`,
        sha256: SHA,
        component: "BMC",
        ...(p.transfer !== undefined ? { transfer: p.transfer } : {}),
      });
      const out = await handler.run(ctx);
      return unpackResult("bmc.firmware", { type_url: out.result!.typeUrl, value: out.result!.value });
    },
    async [Symbol.asyncDispose]() {
      await bmc.stop();
      await origin.shutdown();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CommandFailed) return e.code;
    throw e;
  }
  return "none";
}

const posted = (bmc: FakeBmc, path: string) => bmc.requests.filter((q) => q.method === "POST" && q.path === path);

Deno.test({
  name: "bmc.firmware HTTP_PUSH sends the cached image to MultipartHttpPushUri and follows its task to the version",
  ignore: why !== undefined,
  async fn() {
    await using r = await rig({ multipartPush: true });
    const res = await r.run({ transfer: Transfer.HTTP_PUSH });
    assert.deepEqual([res.transfer, res.previous_version, res.version, res.task_id], [
      "MultipartHttpPushUri",
      "1.45.455b66-rev4",
      "2.0.0",
      "545",
    ]);
    assert.equal(r.bmc.pushes.length, 1);
    const push = r.bmc.pushes[0]!;
    assert.deepEqual([push.path, push.size, push.sha256, push.targets], [MULTIPART_PUSH_URI, IMAGE.length, SHA, [
      BMC_ENTRY,
    ]]);
    assert.match(push.contentType, /^multipart\/form-data; boundary=bcd-[0-9a-f]{32}$/);
    assert.equal(posted(r.bmc, "/redfish/v1/UpdateService/Actions/SimpleUpdate").length, 0);
    assert.equal(posted(r.bmc, MULTIPART_PUSH_URI)[0]?.user, "Administrator");
    assert.deepEqual(r.origin.seen, ["/fw.bin"], "the image came from the origin once, into the cache");
    assert.equal(await r.cache.has(SHA), true);
  },
});

Deno.test({
  name:
    "bmc.firmware HTTP_PUSH to the legacy HttpPushUri (outside /redfish) sets and reserves HttpPushUriTargets, then releases them",
  ignore: why !== undefined,
  async fn() {
    await using r = await rig({ pushTargets: true });
    const res = await r.run({ transfer: Transfer.HTTP_PUSH });
    assert.deepEqual([res.transfer, res.version], ["HttpPushUri", "2.0.0"]);
    const push = r.bmc.pushes[0]!;
    assert.deepEqual([push.path, push.contentType, push.size, push.sha256, push.targets], [
      "/FWUpdate",
      "application/octet-stream",
      IMAGE.length,
      SHA,
      [BMC_ENTRY],
    ]);
    const patches = r.bmc.requests.filter((q) => q.method === "PATCH" && q.path === "/redfish/v1/UpdateService");
    assert.deepEqual(patches.map((q) => q.body), [
      { HttpPushUriTargets: [BMC_ENTRY], HttpPushUriTargetsBusy: true },
      { HttpPushUriTargetsBusy: false },
    ]);
    assert.ok(patches[0]!.ifMatch, "the targets are set under the service's ETag");
    assert.equal(r.bmc.resource("/redfish/v1/UpdateService")?.HttpPushUriTargetsBusy, false);
  },
});

Deno.test({
  name: "bmc.firmware HTTP_PUSH refuses a service whose push targets another client holds, before any image is sent",
  ignore: why !== undefined,
  async fn() {
    await using r = await rig({ pushTargets: true });
    r.bmc.touch("/redfish/v1/UpdateService", { HttpPushUriTargetsBusy: true });
    assert.equal(await failure(r.run({ transfer: Transfer.HTTP_PUSH })), "bmc-refused");
    assert.equal(r.bmc.pushes.length + r.bmc.brokenPushes.length, 0);
  },
});

Deno.test({
  name: "bmc.firmware chooses its transfer: SimpleUpdate when offered, the push when not, each kind on request",
  ignore: why !== undefined,
  async fn(t) {
    await t.step("unspecified, SimpleUpdate offered: SimpleUpdate, no push", async () => {
      await using r = await rig({ multipartPush: true });
      assert.equal((await r.run({})).transfer, "SimpleUpdate");
      assert.equal(r.bmc.pushes.length, 0);
    });
    await t.step("unspecified, no SimpleUpdate: the push", async () => {
      await using r = await rig({ multipartPush: true, noSimpleUpdate: true });
      assert.equal((await r.run({})).transfer, "MultipartHttpPushUri");
    });
    await t.step("unspecified, no SimpleUpdate, no cache: bmc-refused, nothing sent", async () => {
      await using r = await rig({ multipartPush: true, noSimpleUpdate: true });
      assert.equal(await failure(r.run({ cache: null })), "bmc-refused");
      assert.equal(r.bmc.pushes.length, 0);
    });
    await t.step("SIMPLE_UPDATE on a BMC without it: bmc-refused, no push", async () => {
      await using r = await rig({ multipartPush: true, noSimpleUpdate: true });
      assert.equal(await failure(r.run({ transfer: Transfer.SIMPLE_UPDATE })), "bmc-refused");
      assert.equal(r.bmc.pushes.length, 0);
    });
    await t.step("HTTP_PUSH without the image cache: firmware-push-unavailable, the BMC asked nothing", async () => {
      await using r = await rig({ multipartPush: true });
      assert.equal(await failure(r.run({ transfer: Transfer.HTTP_PUSH, cache: null })), "firmware-push-unavailable");
      assert.equal(r.bmc.requests.length, 0);
    });
  },
});

Deno.test({
  name: "bmc.firmware HTTP_PUSH re-hashes the cached image first: bytes changed on disk are removed, never pushed",
  ignore: why !== undefined,
  async fn() {
    await using r = await rig({ multipartPush: true });
    await r.cache.warm(`${r.origin.base}/fw.bin`, SHA);
    const tampered = IMAGE.slice();
    tampered[100] = tampered[100]! ^ 1;
    await Deno.writeFile(r.cache.path(SHA), tampered);
    assert.equal(await failure(r.run({ transfer: Transfer.HTTP_PUSH })), "firmware-digest-mismatch");
    assert.equal(r.bmc.pushes.length + r.bmc.brokenPushes.length, 0);
    assert.equal(posted(r.bmc, MULTIPART_PUSH_URI).length, 0);
    assert.equal(await r.cache.has(SHA), false);
  },
});

Deno.test({
  name:
    "bmc.firmware HTTP_PUSH holds back the image's last bytes until they hash right: a change mid-stream never arrives whole",
  ignore: why !== undefined,
  async fn(t) {
    for (const multipart of [true, false]) {
      await t.step(multipart ? "multipart" : "legacy HttpPushUri", async () => {
        await using r = await rig({ multipartPush: multipart });
        const real = firmwareCache(r.cache, undefined);
        const changed = IMAGE.slice();
        changed[IMAGE.length - 10] = changed[IMAGE.length - 10]! ^ 1; // in the last chunk: the earlier chunks go out before the digest is known
        const swapping: FirmwareCache = {
          warm: (u, s) => real.warm(u, s),
          servedAt: () => undefined,
          open: () =>
            Promise.resolve({
              size: changed.length,
              stream: ReadableStream.from([
                changed.subarray(0, 65536),
                changed.subarray(65536, 131072),
                changed.subarray(131072),
              ]),
              close() {},
            }),
        };
        const version = r.bmc.resource(BMC_ENTRY)?.Version;
        assert.equal(
          await failure(r.run({ transfer: Transfer.HTTP_PUSH, cache: swapping })),
          "firmware-digest-mismatch",
        );
        assert.equal(r.bmc.pushes.length, 0, "no push arrived whole");
        assert.equal(r.bmc.resource(BMC_ENTRY)?.Version, version);
      });
    }
  },
});
