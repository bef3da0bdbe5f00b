// Seed 004 end to end on this host: the testbed publishes bundles, the Runner fetches them by version over HTTP,
// checks them, and pushes them over the control framing into a real `bcd-guest serve` process (the guest role's
// own flags, a temp guest root, the VM's channel key proven first). `current` flips, a new publish refreshes and
// reloads, a hostile bundle is refused with the seed's code and the old tree stays, and a guest without config
// delivery is "guest image too old". Bundles are made by real GNU tar.
import assert from "node:assert/strict";
import { join } from "node:path";
import { ConfigDeliveryError, ConfigRunner, GuestInstallRefused } from "../../core/agent_config/mod.ts";
import { tarBundle } from "../../core/agent_config/_bundles_test_util.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { formatChannelKey, newChannelKey } from "../../core/turns/mod.ts";
import { TestbedGateway } from "../../fixtures/testbed/gateway.ts";
import { serve } from "../../guest/serve.ts";
import { MemoryStream } from "../../guest/memory_transport.ts";
import { roleFlags } from "../../roles/permissions.ts";
import { childConn } from "../guest/framing_conn.ts";
import { FramingClient } from "../guest/framing_client.ts";
import { FramingConfigPort } from "./framing_port.ts";
import { HttpConfigSource } from "./http_source.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const log = silentLogger();

async function _guest() {
  const dir = await Deno.makeTempDir({ prefix: "bcd-cfg-e2e-" });
  const key = newChannelKey();
  await Deno.writeTextFile(join(dir, "channel-key"), formatChannelKey(key) + "\n", { mode: 0o600 });
  const guestRoot = join(dir, "guest");
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...roleFlags("guest", { extraWrite: [guestRoot] }),
      `${ROOT}roles/guest.ts`,
      "serve",
      "--guest-root",
      guestRoot,
      "--channel-key-file",
      join(dir, "channel-key"),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { BCD_LOG_LEVEL: "warn" },
  }).spawn();
  const c = await FramingClient.attach(childConn(child), { requestTimeoutMs: 30_000 });
  await c.authenticate(key);
  const tree = join(guestRoot, "agent-config");
  const cleanup = async () => {
    c.close();
    await child.status;
    await child.stderr.cancel();
    await Deno.remove(dir, { recursive: true });
  };
  return { c, tree, child, cleanup };
}

async function _publish(gw: TestbedGateway, bytes: Uint8Array): Promise<string> {
  const res = await fetch(new URL("agent-config", gw.adminUrl), {
    method: "PUT",
    body: bytes as Uint8Array<ArrayBuffer>,
  });
  assert.equal(res.status, 200);
  return String((await res.json()).version);
}

Deno.test("config delivery end to end: publish, provision, refresh on a new version, hostile bundles refused", async (t) => {
  const gw = await TestbedGateway.start({ dispatchEveryMs: 60_000 });
  const g = await _guest();
  try {
    const source = new HttpConfigSource({ url: gw.agentConfigUrl });
    let reloads = 0;
    const runner = new ConfigRunner({
      source,
      guest: new FramingConfigPort(g.c),
      log,
      reload: () => Promise.resolve(void reloads++),
    });
    let v1 = "";
    await t.step("a published bundle reaches the guest's tree: current flips to its version", async () => {
      v1 = await _publish(gw, await tarBundle({ "agent.yaml": "model: one\n", "skills/s.md": "# s\n" }));
      assert.equal(await runner.provision(), v1);
      assert.equal(await Deno.readLink(join(g.tree, "current")), v1);
      assert.equal((await Deno.readTextFile(join(g.tree, "current/version"))).trim(), v1);
      assert.equal(await Deno.readTextFile(join(g.tree, "current/agent.yaml")), "model: one\n");
    });
    await t.step("the same version again: no push, no reload", async () => {
      assert.equal(await runner.refresh(), "unchanged");
      assert.equal(reloads, 0);
      assert.equal(runner.counts.pushes, 1);
    });
    await t.step("a newer version, signalled by the watch, refreshes and reloads", async () => {
      const watching = source.watch(v1, new AbortController().signal);
      const v2 = await _publish(gw, await tarBundle({ "agent.yaml": "model: two\n" }));
      assert.equal(await watching, v2);
      assert.equal(await runner.refresh(), "installed");
      assert.equal(await Deno.readLink(join(g.tree, "current")), v2);
      assert.equal(await Deno.readTextFile(join(g.tree, "current/agent.yaml")), "model: two\n");
      assert.equal(reloads, 1);
    });
    await t.step("a bundle that breaks the schema is refused on the host; the old tree stays", async () => {
      const before = await Deno.readLink(join(g.tree, "current"));
      await _publish(gw, await tarBundle({ "etc/cron.d/x": "* * * * * root sh\n" }));
      await assert.rejects(runner.refresh(), (e) => e instanceof ConfigDeliveryError && e.code === "bundle-schema");
      assert.equal(await Deno.readLink(join(g.tree, "current")), before);
      assert.equal(runner.lastVersion, before);
    });
    await t.step(
      "a traversal bundle pushed past the host's checks: the guest answers invalid-argument, no flip",
      async () => {
        const before = await Deno.readLink(join(g.tree, "current"));
        const evil = await tarBundle({ "agent.yaml": "x\n" }, "s,^\\./agent,../../evil,");
        await assert.rejects(
          new FramingConfigPort(g.c).install("v-evil", evil),
          (e) => e instanceof GuestInstallRefused && e.code === "invalid-argument",
        );
        assert.equal(await Deno.readLink(join(g.tree, "current")), before);
        await assert.rejects(Deno.lstat(join(g.tree, "..", "evil.yaml")), Deno.errors.NotFound);
      },
    );
    await g.c.stop();
  } finally {
    await g.cleanup();
    await gw.stop();
  }
});

Deno.test("a guest image without config delivery answers unimplemented: provision fails 'guest image too old'", async () => {
  const gw = await TestbedGateway.start({ dispatchEveryMs: 60_000 });
  const s = new MemoryStream();
  const served = serve(s.guest, { log }); // no installer: an older guest agent
  const c = await FramingClient.attach(s.host);
  try {
    await _publish(gw, await tarBundle({ "agent.yaml": "a: 1\n" }));
    const runner = new ConfigRunner({
      source: new HttpConfigSource({ url: gw.agentConfigUrl }),
      guest: new FramingConfigPort(c),
      log,
      reload: () => Promise.resolve(),
    });
    const e = await runner.provision().then(() => null, (e) => e);
    assert.ok(e instanceof ConfigDeliveryError && e.code === "guest-image-too-old", String(e));
    assert.match(e.message, /guest image too old/);
    await c.stop();
    await served;
  } finally {
    c.close();
    await gw.stop();
  }
});
