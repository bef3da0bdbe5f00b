/**
 * `bmc.firmware` with the site's image cache: the image is warmed into the cache from its https origin and the BMC
 * (the fake one, `fixtures/redfish/fake_bmc.ts`) is offered the boot server's copy, which the boot server serves.
 */
import assert from "node:assert/strict";
import { CommandFailed } from "../../core/commands/rejection.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { unpackResult } from "../../proto/mod.ts";
import { FakeBmc } from "../../fixtures/redfish/fake_bmc.ts";
import { BmcHostBook } from "../redfish/bmc_hosts.ts";
import { bmcFirmwareHandler } from "../redfish/kinds/bmc_firmware.ts";
import { bmcContext, MapSecrets, pemSha256, steppingClock } from "../redfish/redfish_testing.ts";
import { bootHttpHandler, imagePath, serveBoot } from "./boot_http.ts";
import { firmwareCache } from "./firmware_cache.ts";
import { ImageCache } from "./image_cache.ts";
import { originCerts, sha256Hex, startOrigin } from "./image_cache_testing.ts";

const certs = await originCerts();
const why = certs === null
  ? "openssl is absent (the origin's and the fake BMC's certificates are made with it)"
  : undefined;
if (why) console.warn(`skipping bmc.firmware with the image cache: ${why}`);

Deno.test({
  name: "bmc.firmware offers the BMC the site's cached copy of the image, and a wrong digest never reaches the BMC",
  ignore: why !== undefined,
  async fn(t) {
    const image = new TextEncoder().encode("firmware image v2\n".repeat(1000));
    const sha = sha256Hex(image);
    const origin = startOrigin({ "/fw.bin": image }, certs!);
    const dir = await Deno.makeTempDir({ prefix: "bcd-fw-cache-" });
    const cache = new ImageCache({ dir: `${dir}/cache`, caCerts: [origin.ca], log: silentLogger() });
    const boot = serveBoot("127.0.0.1:0", bootHttpHandler({ cache, log: silentLogger() }), silentLogger());
    const bmc = await FakeBmc.start({ tls: { cert: certs!.cert, key: certs!.key } });
    const secrets = new MapSecrets().put("cred/admin", "Administrator", "secret");
    const target = {
      host: "127.0.0.1",
      port: bmc.port,
      credential_ref: "cred/admin",
      cert_sha256: pemSha256(certs!.cert),
    };
    const handler = bmcFirmwareHandler({
      secrets,
      hosts: new BmcHostBook(dir),
      clock: steppingClock(),
      firmware: { cache: firmwareCache(cache, boot.url), pollMs: 1000 },
    });
    try {
      await t.step(
        "the SimpleUpdate's ImageURI is the boot server's URL of the digest, which serves the image",
        async () => {
          const { ctx } = bmcContext("bmc.firmware", {
            target,
            image_url: `${origin.base}/fw.bin`,
            sha256: sha,
            component: "BMC",
          });
          const out = await handler.run(ctx);
          const res = unpackResult("bmc.firmware", { type_url: out.result!.typeUrl, value: out.result!.value });
          assert.equal(res.version, "2.0.0");
          const post = bmc.requests.find((q) => q.path === "/redfish/v1/UpdateService/Actions/SimpleUpdate");
          const offered = `${boot.url}${imagePath(sha)}`;
          assert.deepEqual(post?.body, {
            ImageURI: offered,
            TransferProtocol: "HTTP",
            Targets: ["/redfish/v1/UpdateService/FirmwareInventory/BMC"],
          });
          const served = await fetch(offered);
          assert.deepEqual(new Uint8Array(await served.arrayBuffer()), image);
        },
      );
      await t.step("a wrong digest: firmware-digest-mismatch, the BMC asked nothing, nothing cached", async () => {
        const asked = bmc.requests.length;
        const wrong = "0".repeat(64);
        const { ctx } = bmcContext("bmc.firmware", {
          target,
          image_url: `${origin.base}/fw.bin`,
          sha256: wrong,
          component: "BMC",
        });
        const err = await handler.run(ctx).then(() => undefined, (e) => e);
        assert(err instanceof CommandFailed && err.code === "firmware-digest-mismatch", String(err));
        assert.equal(bmc.requests.length, asked);
        assert.equal(await cache.has(wrong), false);
        const r = await fetch(`${boot.url}${imagePath(wrong)}`);
        assert.equal(r.status, 404);
        await r.body?.cancel();
      });
    } finally {
      await bmc.stop();
      await boot.shutdown();
      await origin.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
