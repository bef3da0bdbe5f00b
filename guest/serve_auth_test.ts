// Issue 21: the control framing authenticated with the VM's channel key. A host that has not proven the key gets Ping
// and Echo answered (the re-sync needs them) and nothing else: a config install, a probe or a wrong proof ends the
// session, and nothing is written. Bundles are made by real GNU tar.
import assert from "node:assert/strict";
import { join } from "node:path";
import { encodeFrame, encodeVersion, framingProof, Kind, verifyFramingProof } from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { newChannelKey } from "../core/turns/mod.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import { agentConfigRoot, ConfigInstaller } from "./config_install.ts";
import { MemoryStream } from "./memory_transport.ts";
import { serve } from "./serve.ts";

const log = silentLogger();

async function _bundle(): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-auth-bundle-" });
  await Deno.writeTextFile(join(dir, "agent.yaml"), "a: 1\n");
  const out = await new Deno.Command("tar", { args: ["-czf", join(dir, "b.tgz"), "-C", dir, "agent.yaml"] }).output();
  assert.ok(out.success);
  const bytes = await Deno.readFile(join(dir, "b.tgz"));
  await Deno.remove(dir, { recursive: true });
  return bytes;
}

async function _served() {
  const guestRoot = await Deno.makeTempDir({ prefix: "bcd-auth-root-" });
  const key = newChannelKey();
  const installer = new ConfigInstaller({ guestRoot, log });
  const s = new MemoryStream();
  const done = serve(s.guest, { log, installer, channelKey: key });
  const c = await FramingClient.attach(s.host);
  const cleanup = () => Deno.remove(guestRoot, { recursive: true });
  return { guestRoot, key, s, c, done, cleanup };
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

Deno.test("attack: an install from a host that never proved the key ends the session and writes nothing", async () => {
  const x = await _served();
  try {
    await x.c.ping(); // answered before the proof
    const tgz = await _bundle();
    await x.c.send(Kind.AgentConfigVersion, encodeVersion("v-evil")).catch(() => {});
    await x.c.send(Kind.AgentConfigChunk, tgz).catch(() => {});
    await x.c.send(Kind.AgentConfigEnd).catch(() => {});
    const end = await x.done;
    assert.equal(end.ok, false);
    assert.match(!end.ok ? end.problem : "", /unauthenticated/);
    assert.equal(await _exists(join(agentConfigRoot(x.guestRoot), "current")), false);
  } finally {
    x.c.close();
    await x.cleanup();
  }
});

Deno.test("attack: a host with the wrong key is refused at its proof; the right key installs", async (t) => {
  await t.step("wrong key", async () => {
    const x = await _served();
    try {
      const hostNonce = crypto.getRandomValues(new Uint8Array(32));
      await x.c.send(Kind.AuthHello, hostNonce);
      const ch = await x.c.receive(5000);
      assert.equal(ch.kind, Kind.AuthChallenge);
      const guestNonce = ch.body.subarray(0, 32);
      const other = newChannelKey();
      assert.equal(verifyFramingProof(other, "guest", hostNonce, guestNonce, ch.body.subarray(32)), false);
      await x.c.send(Kind.AuthProof, framingProof(other, "host", hostNonce, guestNonce));
      await x.c.send(Kind.Probe, new TextEncoder().encode("mounts")).catch(() => {});
      const end = await x.done;
      assert.equal(end.ok, false);
      assert.match(!end.ok ? end.problem : "", /bad-proof/);
    } finally {
      x.c.close();
      await x.cleanup();
    }
  });
  await t.step("a guest that does not hold the key is caught by the host", async () => {
    const x = await _served();
    try {
      await assert.rejects(x.c.authenticate(newChannelKey()), /auth/);
    } finally {
      x.c.close();
      await x.cleanup();
    }
  });
  await t.step("right key", async () => {
    const x = await _served();
    try {
      await x.c.authenticate(x.key);
      assert.equal(await x.c.installAgentConfig("v-1", await _bundle()), true);
      assert.equal(await Deno.readLink(join(agentConfigRoot(x.guestRoot), "current")), "v-1");
      await x.c.stop();
      assert.deepEqual(await x.done, { ok: true, reason: "stopped" });
    } finally {
      x.c.close();
      await x.cleanup();
    }
  });
});

Deno.test("attack: a proof without its AuthHello, or a made-up one, ends the session", async () => {
  const x = await _served();
  try {
    x.s.sendRaw(encodeFrame(Kind.AuthProof, new Uint8Array(32)));
    const end = await x.done;
    assert.equal(end.ok, false);
    assert.match(!end.ok ? end.problem : "", /bad-proof/);
  } finally {
    x.c.close();
    await x.cleanup();
  }
});

Deno.test("a transport reset starts a new epoch that must prove the key again", async () => {
  const x = await _served();
  try {
    await x.c.authenticate(x.key);
    await x.c.ping();
    x.s.reset();
    const c2 = await FramingClient.attach(x.s.host, { sync: true });
    await c2.send(Kind.Probe, new TextEncoder().encode("mounts")).catch(() => {});
    const end = await x.done;
    assert.equal(end.ok, false);
    assert.match(!end.ok ? end.problem : "", /unauthenticated/);
    c2.close();
  } finally {
    x.c.close();
    await x.cleanup();
  }
});
