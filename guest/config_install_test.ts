/**
 * Installing agent config bundles into the guest (seed 004 T2's test cycle) through `serve` and the worker, with
 * bundles made by real GNU tar.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { decodeInstallResult, encodeFrame, encodeVersion, Kind } from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { FramingClient, InstallRefused } from "../runtimes/guest/framing_client.ts";
import { agentConfigRoot, ConfigInstaller } from "./config_install.ts";
import { MemoryStream } from "./memory_transport.ts";
import { serve } from "./serve.ts";
import { session } from "./_session_harness.ts";

const log = silentLogger();

/** A gzip-tar of `files` made by GNU tar; `transform` renames members (hostile bundles). */
async function bundle(files: Record<string, string>, transform?: string): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-bundle-" });
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(dir, "src", name, ".."), { recursive: true });
    await Deno.writeTextFile(join(dir, "src", name), text);
  }
  const args = ["-czf", join(dir, "b.tgz"), ...(transform ? ["-P", `--transform=${transform}`] : [])];
  const out = await new Deno.Command("tar", { args: [...args, "-C", join(dir, "src"), "."] }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const bytes = await Deno.readFile(join(dir, "b.tgz"));
  await Deno.remove(dir, { recursive: true });
  return bytes;
}

async function served(opts: { maxWireBytes?: number; guestRoot?: string } = {}) {
  const guestRoot = opts.guestRoot ?? await Deno.makeTempDir({ prefix: "bcd-guest-root-" });
  const installer = new ConfigInstaller({ guestRoot, log, maxWireBytes: opts.maxWireBytes });
  const s = new MemoryStream();
  const done = serve(s.guest, { log, installer });
  const c = await FramingClient.attach(s.host);
  return { guestRoot, tree: agentConfigRoot(guestRoot), s, c, done };
}

/** Sends raw install frames and returns the one result. */
async function rawInstall(c: FramingClient, frames: [number, Uint8Array?][]) {
  for (const [kind, body] of frames) await c.send(kind, body ?? new Uint8Array(0));
  const m = await c.receive(5000);
  assert.equal(m.kind, Kind.AgentConfigResult);
  return decodeInstallResult(m.body);
}

Deno.test("a bundle installs with 0755/0644 modes, current/version holds its version, and the guest root is 0711", async () => {
  const x = await served();
  const tgz = await bundle({ "agent.yaml": "a: 1\n", "skills/one.md": "# one\n" });
  assert.equal(await x.c.installAgentConfig("v-1", tgz), true);
  assert.equal((await Deno.readTextFile(join(x.tree, "current/version"))).trim(), "v-1");
  assert.equal(await Deno.readTextFile(join(x.tree, "current/agent.yaml")), "a: 1\n");
  assert.equal((await Deno.stat(join(x.tree, "current/skills"))).mode! & 0o777, 0o755);
  assert.equal((await Deno.stat(join(x.tree, "current/skills/one.md"))).mode! & 0o777, 0o644);
  assert.equal((await Deno.stat(x.guestRoot)).mode! & 0o777, 0o711);
  assert.equal(await Deno.readLink(join(x.tree, "current")), "v-1");
  // Idempotent per version; a refresh on the same version is skipped by the host.
  assert.equal(await x.c.installAgentConfig("v-1", tgz), true);
  assert.equal(await x.c.installAgentConfig("v-1", tgz, { ifVersion: "v-1" }), false);
  const v2 = await bundle({ "agent.yaml": "a: 2\n" });
  assert.equal(await x.c.installAgentConfig("v-2", v2, { ifVersion: "v-1" }), true);
  assert.equal(await Deno.readTextFile(join(x.tree, "current/agent.yaml")), "a: 2\n");
  await x.c.stop();
  await x.done;
});

Deno.test("frame order and versions the guest refuses with invalid-argument", async (t) => {
  const tgz = await bundle({ "a.txt": "a" });
  const rows: [string, [number, Uint8Array?][]][] = [
    ["a chunk before the version", [[Kind.AgentConfigChunk, tgz], [Kind.AgentConfigEnd]]],
    ["an end before the version", [[Kind.AgentConfigEnd]]],
    ["a second version", [[Kind.AgentConfigVersion, encodeVersion("v-1")], [
      Kind.AgentConfigVersion,
      encodeVersion("v-2"),
    ], [Kind.AgentConfigEnd]]],
    ["the version current", [[Kind.AgentConfigVersion, encodeVersion("current")], [Kind.AgentConfigChunk, tgz], [
      Kind.AgentConfigEnd,
    ]]],
    ["the version ../x", [[Kind.AgentConfigVersion, encodeVersion("../x")], [Kind.AgentConfigChunk, tgz], [
      Kind.AgentConfigEnd,
    ]]],
    ["an empty version with chunks", [[Kind.AgentConfigVersion, encodeVersion("")], [Kind.AgentConfigChunk, tgz], [
      Kind.AgentConfigEnd,
    ]]],
    ["a version that is not UTF-8", [[Kind.AgentConfigVersion, Uint8Array.of(0xff)], [Kind.AgentConfigEnd]]],
  ];
  for (const [name, frames] of rows) {
    await t.step(name, async () => {
      const x = await served();
      const r = await rawInstall(x.c, frames);
      assert.equal(r.code, "invalid-argument", r.problem);
      await assert.rejects(Deno.lstat(join(x.tree, "current")), Deno.errors.NotFound);
      await x.c.ping(); // the stream stays in step
      await x.c.stop();
      await x.done;
    });
  }
});

Deno.test("exactly the wire cap passes the wire check; one byte more is resource-exhausted", async () => {
  const tgz = await bundle({ "a.txt": "a" });
  const x = await served({ maxWireBytes: tgz.length });
  assert.equal(await x.c.installAgentConfig("v-1", tgz, { maxWireBytes: Infinity }), true);
  const over = Uint8Array.of(...tgz, 0);
  const r = await rawInstall(x.c, [[Kind.AgentConfigVersion, encodeVersion("v-2")], [Kind.AgentConfigChunk, over], [
    Kind.AgentConfigEnd,
  ]]);
  assert.equal(r.code, "resource-exhausted");
  assert.equal(await Deno.readLink(join(x.tree, "current")), "v-1");
  await x.c.stop();
  await x.done;
});

Deno.test("a traversal bundle is invalid-argument, with no flip", async () => {
  const x = await served();
  await x.c.installAgentConfig("v-1", await bundle({ "a.txt": "a" }));
  const evil = await bundle({ "x": "evil" }, "s,^\\./x,../x,");
  await assert.rejects(
    x.c.installAgentConfig("v-2", evil),
    (e: unknown) =>
      e instanceof InstallRefused && e.result.code === "invalid-argument" && /unsafe/.test(e.result.problem),
  );
  assert.equal(await Deno.readLink(join(x.tree, "current")), "v-1");
  await assert.rejects(Deno.stat(join(x.tree, "..", "x")), Deno.errors.NotFound);
  await x.c.stop();
  await x.done;
});

Deno.test("an empty version with no chunks installs no tree; a file-system failure is internal", async () => {
  const x = await served();
  assert.equal(await x.c.installAgentConfig("", new Uint8Array(0)), true);
  await assert.rejects(Deno.lstat(join(x.tree, "current")), Deno.errors.NotFound);
  await x.c.stop();
  await x.done;
  const broken = await Deno.makeTempDir();
  await Deno.writeTextFile(join(broken, "agent-config"), "not a directory");
  const y = await served({ guestRoot: broken });
  await assert.rejects(
    y.c.installAgentConfig("v-1", await bundle({ "a.txt": "a" })),
    (e: unknown) => e instanceof InstallRefused && e.result.code === "internal",
  );
  await y.c.stop();
  await y.done;
});

Deno.test("the worker refuses an install before its root is ready with failed-precondition, and takes it after", async () => {
  const guestRoot = await Deno.makeTempDir();
  const installer = new ConfigInstaller({ guestRoot, log });
  const x = await session({ configure: false, worker: { installer } });
  const tgz = await bundle({ "a.txt": "a" });
  await assert.rejects(
    x.c.installAgentConfig("v-1", tgz),
    (e: unknown) => e instanceof InstallRefused && e.result.code === "failed-precondition",
  );
  const { defaultRootConfig } = await import("../core/framing/mod.ts");
  assert.ok("ready" in await x.c.configureRoot(defaultRootConfig()));
  assert.equal(await x.c.installAgentConfig("v-1", tgz), true);
  assert.equal(await Deno.readLink(join(agentConfigRoot(guestRoot), "current")), "v-1");
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("an install the session reset interrupts is dropped", async () => {
  const x = await served();
  x.s.sendRaw(encodeFrame(Kind.AgentConfigVersion, encodeVersion("v-1")));
  x.s.reattach();
  await x.c.done;
  const c2 = await FramingClient.attach(x.s.host, { sync: true });
  const r = await rawInstall(c2, [[Kind.AgentConfigEnd]]);
  assert.equal(r.code, "invalid-argument", "the new epoch has no version frame");
  await c2.stop();
  await x.done;
});
