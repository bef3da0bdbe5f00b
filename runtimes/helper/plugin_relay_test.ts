/**
 * Driver plugins through the root helper: the agent's `PluginHost` over `HelperPluginSource`, a real helper socket,
 * and the helper starting the sample plugins (`core/plugins/sample_testing.ts`) from its own directory — as `nobody`
 * through `setpriv` where this test runs as root, as this user otherwise (the identity test is then ignored with the
 * reason printed). Each failure of the plugin contract arrives at the agent with its reason; none harms the helper.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { PluginError, PluginHost, type PluginSource } from "../../core/plugins/mod.ts";
import { DirPluginSource } from "../../core/plugins/mod.ts";
import { type Sample, writeSamplePlugin } from "../../core/plugins/sample_testing.ts";
import { startTestHelper, type TestHelper } from "./helper_testing.ts";
import { HelperPluginSource } from "./plugin_source.ts";
import { UserPluginSource } from "./plugin_user.ts";
import { pluginRuntimeContract, pluginRuntimeTapRule } from "../../core/plugins/runtime_contract_testing.ts";

const SETPRIV = await new Deno.Command("setpriv", { args: ["--version"], stdout: "null", stderr: "null" }).output()
  .then((o) => o.success, (e) => {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  });
const AS_NOBODY = Deno.uid() === 0 && SETPRIV;
const WHY_NOT_NOBODY = Deno.uid() !== 0 ? "not root" : "no setpriv (util-linux)";
if (!AS_NOBODY) console.log(`plugin identity test ignored: ${WHY_NOT_NOBODY}; the relay tests run as this user`);

const never = () => new AbortController().signal;
const failsWith = (reason: string, re?: RegExp) => (e: unknown) => {
  assert.ok(e instanceof PluginError, `${e}`);
  assert.equal(e.reason, reason, e.message);
  if (re) assert.match(e.message, re);
  return true;
};

/** A helper whose plugin directory holds the sample, and an agent-side host over it. */
async function relayed(s: Sample = {}) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-relay-plugins-" });
  await Deno.chmod(dir, 0o755);
  await writeSamplePlugin(dir, s);
  const source: PluginSource = AS_NOBODY ? new UserPluginSource({ dir, user: "nobody" }) : new DirPluginSource({ dir });
  const h: TestHelper = await startTestHelper({ plugins: source });
  const host = new PluginHost({
    source: new HelperPluginSource(h.client),
    bcdVersion: "0.0.0-test",
    log: silentLogger(),
  });
  return {
    h,
    host,
    /** Resolves once the helper logged `n` plugin ends (an event of the helper, polled; no deadline of its own). */
    async ended(n: number): Promise<void> {
      while (h.logs.filter((l) => l.msg === "helper: plugin ended").length < n) {
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    async [Symbol.asyncDispose]() {
      await host.close();
      await h.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("through the helper: the plugin answers by request id, one process serves the next calls", async () => {
  await using t = await relayed();
  const a = JSON.parse(await t.host.invoke("sample", "echo", '{"disk":"/dev/sda"}', never()));
  assert.deepEqual(a.echo, { disk: "/dev/sda" });
  const [b, c] = await Promise.all([
    t.host.invoke("sample", "echo", "1", never()),
    t.host.invoke("sample", "echo", "2", never()),
  ]);
  assert.deepEqual([JSON.parse(b).echo, JSON.parse(c).echo], [1, 2]);
  assert.equal(JSON.parse(b).pid, a.pid, "one process");
  await assert.rejects(t.host.invoke("sample", "fail", "{}", never()), failsWith("plugin-failed", /no such disk/));
  assert.deepEqual((await t.host.list()).map((m) => m.name), ["sample"]);
  const attach = t.h.logs.filter((l) => l.op === "plugin.attach");
  assert.equal(attach.length, 1, "one attach: the process stayed");
});

Deno.test({
  name: "through the helper: the plugin runs as the plugins' user, with no descriptor but its three pipes inherited",
  ignore: !AS_NOBODY,
  fn: async () => {
    await using t = await relayed();
    const me = JSON.parse(await t.host.invoke("sample", "whoami", "{}", never()));
    assert.deepEqual([me.uid, me.gid], [65534, 65534]);
    const fds = new Map((me.fds as string[]).map((l) => l.split("=") as [string, string]));
    for (const fd of ["0", "1", "2"]) assert.match(fds.get(fd) ?? "", /^pipe:\[/, `fd ${fd}: ${fds.get(fd)}`);
    // The helper runs in this process: none of its sockets, pipes or files may be open in the plugin (Deno's own
    // runtime opens sockets and eventfds of its own, so the test compares with the helper's, not with a fixed list).
    const helperFds = new Set<string>();
    for (const e of Deno.readDirSync("/proc/self/fd")) {
      try {
        const target = Deno.readLinkSync(`/proc/self/fd/${e.name}`);
        if (/^(socket|pipe):|^\/(?!dev\/|proc\/)/.test(target)) helperFds.add(target);
      } catch (err) {
        if (!(err instanceof Deno.errors.NotFound)) throw err; // the directory's own descriptor, gone
      }
    }
    assert.ok([...helperFds].some((x) => x.startsWith("socket:")), "the helper's listener and connections are seen");
    // The plugin's own stdio, dup'ed by Deno's runtime, is its own: the same pipes as its fds 0-2.
    const stdio = new Set(["0", "1", "2"].map((fd) => fds.get(fd)));
    for (const [fd, target] of fds) {
      if (Number(fd) <= 2 || stdio.has(target)) continue;
      assert.ok(!helperFds.has(target), `fd ${fd} of the plugin is the helper's ${target}`);
    }
  },
});

Deno.test("through the helper: a plugin that hangs is killed at its timeout, and the helper's process is gone", async () => {
  await using t = await relayed({ mode: "hang", manifest: { timeouts: { handshakeMs: 120_000, invokeMs: 200 } } });
  await assert.rejects(t.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-timeout", /killed/));
  await t.ended(1);
  await assert.rejects(t.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-timeout"));
  await t.ended(2);
});

Deno.test("through the helper: a crash fails the call with the status and stderr the helper relays", async () => {
  await using t = await relayed();
  const before = JSON.parse(await t.host.invoke("sample", "echo", "{}", never())).pid;
  await assert.rejects(
    t.host.invoke("sample", "boom", "{}", never()),
    failsWith("plugin-crashed", /status 3.*disk on fire/),
  );
  const after = JSON.parse(await t.host.invoke("sample", "echo", "{}", never())).pid;
  assert.notEqual(after, before, "a fresh process");
});

Deno.test("through the helper: another protocol version is refused with both named", async () => {
  await using t = await relayed({ protocol: 2 });
  await assert.rejects(
    t.host.invoke("sample", "echo", "{}", never()),
    failsWith("plugin-protocol", /speaks protocol 2; this bcd speaks 1/),
  );
  await using m = await relayed({ manifest: { protocol: 2 } });
  await assert.rejects(m.host.invoke("sample", "echo", "{}", never()), failsWith("plugin-protocol", /protocol 2/));
});

Deno.test("through the helper: an output flood is killed by the helper at the frame bound; stderr floods are drained", async () => {
  await using t = await relayed();
  await assert.rejects(
    t.host.invoke("sample", "flood", "{}", never()),
    failsWith("plugin-protocol", /wrote a frame over 1048576 bytes/),
  );
  assert.equal(await t.host.invoke("sample", "noisy", '"ok"', never()), '"ok"');
});

Deno.test("through the helper: cancel is relayed and the plugin's answer ends the call", async () => {
  await using t = await relayed();
  const ac = new AbortController();
  const call = t.host.invoke("sample", "slow", "{}", ac.signal);
  while (t.host.inFlight("sample") !== 1) await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  await assert.rejects(call, failsWith("cancelled", /cancelled: stopped/));
});

Deno.test("through the helper: unknown plugins and operations are named refusals; the node never sends a path", async () => {
  await using t = await relayed();
  await assert.rejects(t.host.invoke("nope", "echo", "{}", never()), failsWith("unknown-plugin", /no plugin nope/));
  await assert.rejects(t.host.invoke("sample", "format", "{}", never()), failsWith("unknown-operation"));
  await assert.rejects(
    t.h.client.call("plugin.attach", { name: "../../bin" }),
    /name "\.\.\/\.\.\/bin" is not a plugin/,
  );
  await assert.rejects(t.h.client.call("plugin.manifest", { name: "/etc" }), /is not a plugin name/);
  await assert.rejects(
    t.h.client.call("plugin.attach", { name: "sample" }),
    /only as a connection's first request/,
    "the node's shared connection cannot become a relay",
  );
});

Deno.test("through the helper: an agent that goes away takes its plugin with it; frames it did not check are refused", async () => {
  await using t = await relayed();
  await t.host.invoke("sample", "echo", "{}", never());
  await t.host.close();
  await t.ended(1);
  // A raw connection that attaches and then sends a frame that is not the host's: the helper kills the plugin.
  const conn = await Deno.connect({ transport: "unix", path: t.h.socket });
  const w = (s: string) => conn.write(new TextEncoder().encode(s));
  await w('{"id":1,"op":"plugin.attach","args":{"name":"sample"}}\n');
  await w('{"t":"hello","protocols":[1],"bcd":"x"}\n{"t":"exec","cmd":"/bin/sh"}\n');
  const text = await new Response(conn.readable).text();
  const lines = text.trim().split("\n");
  assert.match(lines[0]!, /"attached":\{"name":"sample"/);
  assert.match(lines.at(-1)!, /^\{"t":"exit".*"reason":"plugin-protocol".*unknown type \\"exec\\"/);
  await t.ended(2);
});

Deno.test("InstanceRuntime contract, runtime plugin through the helper: list, apply, remove; the tap rule", async (t) => {
  await using good = await relayed();
  await pluginRuntimeContract(t, good.host);
  await using notaps = await relayed({ mode: "notaps" });
  await t.step(
    "a plugin that forgets a tap: the instance is stopped and failed",
    () => pluginRuntimeTapRule(notaps.host),
  );
});
