/**
 * The Redfish client against DMTF's real `redfish-mockup-server` (`../shared/peers/`, the `public-rackmount1` tree)
 * over https with its leaf pinned by SHA-256. The mockup checks no credentials and keeps no ETags (the fake BMC's
 * tests cover those); what it proves is the client on a server it was not written with: its session answer (204 with
 * `X-Auth-Token`), its links, its actions, its PATCH merge and its 404s.
 */
import assert from "node:assert/strict";
import { peersMissing, startMockup } from "../../fixtures/redfish/peers.ts";
import { makeCerts } from "../host/certs_testing.ts";
import { link, RedfishClient } from "./client.ts";
import { RedfishError } from "./errors.ts";
import { certSha256 } from "./socket_transport.ts";
import { steppingClock } from "./redfish_testing.ts";

const certs = await makeCerts();
const why = peersMissing("mockup") ?? (certs === null ? "openssl is absent" : undefined);
if (why) console.warn(`skipping the DMTF mockup peer test: ${why}`);

Deno.test({
  name: "RedfishClient drives DMTF's mockup server (public-rackmount1) over a pinned TLS session",
  ignore: why !== undefined,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "bcd-mockup-" });
    await Deno.writeTextFile(`${dir}/cert.pem`, certs!.cert);
    await Deno.writeTextFile(`${dir}/key.pem`, certs!.key);
    const peer = await startMockup({ certFile: `${dir}/cert.pem`, keyFile: `${dir}/key.pem` });
    const der = Uint8Array.from(
      atob(certs!.cert.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "")),
      (c) => c.charCodeAt(0),
    );
    const c = new RedfishClient({
      host: "127.0.0.1",
      port: peer.port,
      credentials: { username: "Administrator", password: "password" },
      certSha256: certSha256(der),
      clock: steppingClock(),
    });
    try {
      const path = await c.systemPath("");
      await t.step("a session and the only system by its @odata.id", async () => {
        assert.equal(c.authMode, "session");
        assert.equal(path, "/redfish/v1/Systems/437XR1138R2");
        const sys = await c.get(path);
        assert.equal(sys.body.SerialNumber, "437XR1138R2");
        assert.equal(link(sys.body, "VirtualMedia", path), `${path}/VirtualMedia`);
      });
      await t.step("a PATCH is merged and read back", async () => {
        await c.patch(path, { Boot: { BootSourceOverrideTarget: "Hdd", BootSourceOverrideEnabled: "Continuous" } });
        const boot = (await c.get(path)).body.Boot as Record<string, unknown>;
        assert.equal(boot.BootSourceOverrideTarget, "Hdd");
        assert.equal(boot.BootSourceOverrideEnabled, "Continuous");
        assert.equal(boot.BootSourceOverrideMode, "UEFI"); // merged, not replaced
      });
      await t.step("an action the resource lists answers 204; one it does not is a 404", async () => {
        assert.equal((await c.post(`${path}/Actions/ComputerSystem.Reset`, { ResetType: "ForceOff" })).status, 204);
        const e = await c.post(`${path}/Actions/ComputerSystem.Nope`, {}).catch((e) => e);
        assert(e instanceof RedfishError && e.code === "bmc-refused" && e.details.status === 404, String(e));
      });
      await t.step("accounts by their members", async () => {
        const accounts = await c.members("/redfish/v1/AccountService/Accounts");
        assert.deepEqual(accounts, ["/redfish/v1/AccountService/Accounts/1"]); // the one member the tree lists
      });
    } finally {
      await c.close();
      await peer.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
