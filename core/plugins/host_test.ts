import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import { commandBody } from "../commands/command.ts";
import { CommandFailed, InvalidPayload } from "../commands/rejection.ts";
import { silentLogger } from "../log/mod.ts";
import { driverInvokeHandler } from "./driver_invoke.ts";
import { PluginHost } from "./host.ts";
import { MAX_FRAME, PluginError } from "./protocol.ts";
import { type Sample, writeSamplePlugin } from "./sample_testing.ts";

/** A plugin directory with one plugin, `sample`, written by the test. */
async function pluginDir(s: Sample = {}) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-plugins-" });
  await writeSamplePlugin(dir, s);
  const host = new PluginHost({
    dir,
    bcdVersion: "0.0.0-test",
    log: silentLogger(),
    env: { PATH: "/usr/bin:/bin", DENO_DIR: `${dir}/.deno`, HOME: dir, DENO_NO_UPDATE_CHECK: "1" },
  });
  return {
    dir,
    host,
    async [Symbol.asyncDispose]() {
      await host.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const never = () => new AbortController().signal;

/** Waits until `plugin` has `n` requests in flight (an event of the host, polled; no deadline of its own). */
async function inFlight(host: PluginHost, plugin: string, n: number): Promise<void> {
  while (host.inFlight(plugin) !== n) await new Promise((r) => setTimeout(r, 5));
}
const failsWith = (reason: string, re?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof PluginError, `${e}`);
  assert.equal(e.reason, reason, e.message);
  if (re) assert.match(e.message, re);
  return true;
};

Deno.test("a plugin starts on its first call, answers by request id, and its process serves the next call", async () => {
  await using t = await pluginDir();
  const a = JSON.parse(await t.host.invoke("sample", "echo", '{"disk":"/dev/sda"}', never()));
  assert.deepEqual(a.echo, { disk: "/dev/sda" });
  const [b, c] = await Promise.all([
    t.host.invoke("sample", "echo", "1", never()),
    t.host.invoke("sample", "echo", "2", never()),
  ]);
  assert.deepEqual([JSON.parse(b).echo, JSON.parse(c).echo], [1, 2], "two calls in flight, each its own answer");
  assert.equal(JSON.parse(b).pid, a.pid, "one process for the plugin");
  await assert.rejects(
    t.host.invoke("sample", "fail", "{}", never()),
    failsWith("plugin-failed", /bad-input: no such disk/),
  );
  assert.deepEqual((await t.host.list()).map((m) => [m.name, m.version, m.protocol]), [["sample", "0.1.0", 1]]);
});

Deno.test("an unknown plugin, operation or a manifest naming another plugin is a named refusal", async () => {
  await using t = await pluginDir();
  await assert.rejects(t.host.invoke("nope", "echo", "{}", never()), failsWith("unknown-plugin", /no plugin nope/));
  await assert.rejects(t.host.invoke("../etc", "echo", "{}", never()), failsWith("unknown-plugin"));
  await assert.rejects(
    t.host.invoke("sample", "format", "{}", never()),
    failsWith("unknown-operation", /serves no operation "format"/),
  );
  await using other = await pluginDir({ manifest: { name: "other" } });
  await assert.rejects(other.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-protocol", /directory's/));
  await using badExe = await pluginDir({ manifest: { executable: "../../bin/sh" } });
  await assert.rejects(badExe.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-protocol", /executable/));
});

Deno.test("a plugin that hangs is killed at its timeout; the next call starts it again", async () => {
  await using t = await pluginDir({ mode: "hang", manifest: { timeouts: { handshakeMs: 120_000, invokeMs: 200 } } });
  await assert.rejects(t.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-timeout", /killed/));
  await assert.rejects(t.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-timeout"));
  await using mute = await pluginDir({ mode: "mute", manifest: { timeouts: { handshakeMs: 200 } } });
  await assert.rejects(mute.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-timeout", /hello/));
});

Deno.test("a plugin that crashes fails the call with its status and stderr; the host starts a fresh one", async () => {
  await using t = await pluginDir();
  const before = JSON.parse(await t.host.invoke("sample", "echo", "{}", never())).pid;
  await assert.rejects(
    t.host.invoke("sample", "boom", "{}", never()),
    failsWith("plugin-crashed", /status 3.*disk on fire/),
  );
  const after = JSON.parse(await t.host.invoke("sample", "echo", "{}", never())).pid;
  assert.notEqual(after, before);
});

Deno.test("a plugin of another protocol version is refused with both versions named", async () => {
  await using t = await pluginDir({ protocol: 2 });
  await assert.rejects(
    t.host.invoke("sample", "echo", "{}", never()),
    failsWith("plugin-protocol", /speaks protocol 2; this bcd speaks 1/),
  );
  await using m = await pluginDir({ manifest: { protocol: 2 } });
  await assert.rejects(m.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-protocol", /protocol 2/));
});

Deno.test("a plugin that floods stdout is killed at the frame bound; one that floods stderr still answers", async () => {
  await using t = await pluginDir();
  await assert.rejects(
    t.host.invoke("sample", "flood", "{}", never()),
    failsWith("plugin-protocol", new RegExp(`over ${MAX_FRAME} bytes`)),
  );
  assert.equal(await t.host.invoke("sample", "noisy", '"ok"', never()), '"ok"');
});

Deno.test("cancel is forwarded: the plugin's answer ends the call; one that ignores it is killed after its grace", async () => {
  await using t = await pluginDir();
  const ac = new AbortController();
  const call = t.host.invoke("sample", "slow", "{}", ac.signal);
  await inFlight(t.host, "sample", 1);
  ac.abort();
  await assert.rejects(call, failsWith("cancelled", /cancelled: stopped/));
  await using h = await pluginDir({ mode: "hang", manifest: { timeouts: { cancelGraceMs: 100 } } });
  const ac2 = new AbortController();
  const call2 = h.host.invoke("sample", "slow", "{}", ac2.signal);
  await inFlight(h.host, "sample", 1);
  ac2.abort();
  await assert.rejects(call2, failsWith("cancelled", /killed after its grace/));
});

function ctx(driver: string, operation: string, input_json: string, signal = never()) {
  const p = packPayload("driver.invoke", { driver, operation, input_json });
  return {
    command: commandBody({
      id: "c",
      nodeId: "n",
      kind: "driver.invoke",
      payload: { typeUrl: p.type_url, value: p.value },
    }),
    signal,
    bootId: "b",
    logger: silentLogger(),
  };
}

Deno.test("driver.invoke routes to the plugin, locks it, and fails the command with the plugin's reason", async () => {
  await using t = await pluginDir();
  const h = driverInvokeHandler(t.host);
  assert.deepEqual(h.resources!(ctx("sample", "echo", "{}").command), ["plugin:sample"]);
  assert.throws(() => h.resources!(ctx("Bad/Name", "echo", "{}").command), InvalidPayload);
  const r = await h.run(ctx("sample", "echo", '{"n":7}'));
  const res = unpackResult("driver.invoke", { type_url: r.result!.typeUrl, value: r.result!.value });
  assert.deepEqual(JSON.parse(res.output_json ?? "").echo, { n: 7 });
  for (
    const [driver, op, code] of [
      ["nope", "echo", "unknown-plugin"],
      ["sample", "format", "unknown-operation"],
      ["sample", "fail", "plugin-failed"],
      ["sample", "boom", "plugin-crashed"],
    ] as const
  ) {
    await assert.rejects(h.run(ctx(driver, op, "{}")), (e) => e instanceof CommandFailed && e.code === code);
  }
  // the agent's host is unharmed: the next call works
  const again = await h.run(ctx("sample", "echo", "1"));
  assert.ok(again.result);
});
