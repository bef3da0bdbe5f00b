import assert from "node:assert/strict";
import {
  defaultRootConfig,
  encodeFrame,
  encodeHostMessage,
  encodeMaps,
  encodeRootConfig,
  Kind,
  type Mapping,
  ROOT_STAGES,
  type RootConfig,
} from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import { FakeRoot } from "./fake_root.ts";
import { MemoryStream } from "./memory_transport.ts";
import { GUEST_BUILD, Worker } from "./worker.ts";
import { session, start } from "./_session_harness.ts";

const RAM = "nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:abcd";
const GPT = "nvx_sandbox=1 nvx_layer=distro,0xd0003000,gpt:abcd nvx_scratch=0xd0006000,ext4";

Deno.test("a root that the worker assembles, probes, and tears down on a stop, across a reset", async () => {
  const x = await session();
  assert.deepEqual(x.root.ops, ["layout", "bootstrap", "assembly"]);
  const facts = await x.c.probe({ name: "mounts", args: [] });
  assert.ok("facts" in facts);
  assert.deepEqual(facts.facts.slice(0, 3), [["distro.count", "1"], ["distro.type", "erofs"], [
    "distro.source",
    "/dev/vda",
  ]]);
  assert.equal(new Map(facts.facts).get("scratch.type"), "ext4");
  x.s.reattach();
  await x.c.done;
  const c2 = await FramingClient.attach(x.s.host, { sync: true });
  await c2.ping();
  assert.deepEqual(await c2.probe({ name: "echo-args", args: ["a"] }), { facts: [["arg0", "a"]] });
  assert.equal(await c2.stop(), null);
  assert.equal(await x.run, 0);
  assert.deepEqual(x.root.ops.slice(-2), ["teardown", "release"]);
});

Deno.test("an image over RAM in the configuration's overlay mode, and a GPT disk with its bound", async () => {
  const ram = await session({
    root: { cmdline: RAM },
    config: { ...defaultRootConfig(), overlayMode: "untrusted-lowers" },
  });
  const f = await ram.c.probe({ name: "mounts", args: [] });
  assert.ok("facts" in f);
  const mounts = new Map(f.facts);
  assert.equal(mounts.get("tmpfs.type"), "tmpfs");
  assert.equal(mounts.has("scratch.count"), false);
  assert.match(mounts.get("root.super")!, /redirect_dir=nofollow,metacopy=off/);
  await ram.c.stop();
  assert.equal(await ram.run, 0);
  const gpt = await session({
    root: { cmdline: GPT },
    config: { ...defaultRootConfig(), firstPartitionBound: 65536n },
  });
  const g = await gpt.c.probe({ name: "first-partition", args: [] });
  assert.ok("facts" in g);
  assert.equal(new Map(g.facts).get("length"), "4096");
  await gpt.c.stop();
  assert.equal(await gpt.run, 0);
  const over = await session({
    root: { cmdline: GPT },
    config: { ...defaultRootConfig(), firstPartitionBound: 65535n },
    configure: false,
  });
  const a = await over.c.configureRoot({ ...defaultRootConfig(), firstPartitionBound: 65535n });
  assert.deepEqual(a, {
    failed: { stage: "assembly", problem: "the first partition holds 65536 bytes, beyond its bound of 65535" },
  });
  assert.equal(await over.run, 14);
});

/** One row per stage of the seed's table (teardown has its own test). */
const STAGE_FAILURES: {
  stage: string;
  config?: RootConfig;
  configBody?: Uint8Array;
  cmdline?: string;
  fail?: boolean;
  ops: string[];
}[] = [
  { stage: "configuration", configBody: new TextEncoder().encode("version=2\n"), ops: [] },
  { stage: "layout", cmdline: "console=hvc0", ops: ["layout"] },
  { stage: "layout", cmdline: RAM, config: { ...defaultRootConfig(), scratchSectors: 8n }, ops: ["layout"] },
  { stage: "layout", config: { ...defaultRootConfig(), firstPartitionBound: 4096n }, ops: ["layout"] },
  { stage: "bootstrap", fail: true, ops: ["layout", "bootstrap"] },
  { stage: "assembly", fail: true, ops: ["layout", "bootstrap", "assembly"] },
];

Deno.test("the failure of each stage: RootFailed with the stage, its status, no later stage", async (t) => {
  for (const row of STAGE_FAILURES) {
    await t.step(`${row.stage} ${row.cmdline ?? ""} ${row.config ? "config" : ""}`, async () => {
      const s = new MemoryStream();
      const root = new FakeRoot({ cmdline: row.cmdline, failStage: row.fail ? row.stage as "bootstrap" : undefined });
      const run = new Worker(s.guest, { ops: root, log: silentLogger() }).run();
      const c = await FramingClient.attach(s.host);
      const body = row.configBody ?? encodeRootConfig(row.config ?? defaultRootConfig());
      await c.send(Kind.RootConfig, body);
      const m = await c.receive(5000);
      assert.equal(m.kind, Kind.RootFailed);
      const spec = ROOT_STAGES.find((x) => x.stage === row.stage)!;
      assert.equal(m.body[0], spec.code);
      assert.equal(await run, spec.status);
      assert.deepEqual(root.ops, [...row.ops, "release"]);
    });
  }
});

Deno.test("a teardown that fails is reported before Stopped, and the worker ends with 15", async () => {
  const x = await session({ root: { failStage: "teardown" } });
  assert.deepEqual(await x.c.stop(), { stage: "teardown", problem: "the fake teardown fails" });
  assert.equal(await x.run, 15);
});

Deno.test("before the root: Stop ends it without a root; other messages end the session", async (t) => {
  await t.step("Stop", async () => {
    const x = await session({ configure: false });
    assert.equal(await x.c.stop(), null);
    assert.equal(await x.run, 0);
    assert.deepEqual(x.root.ops, ["release"]);
  });
  const key = { id: 1n, generation: 1n };
  const m = encodeHostMessage({ type: "start", key, start: start(["/bin/true"]) });
  for (
    const [name, frame] of [
      ["Ping", encodeFrame(Kind.Ping)],
      ["Probe", encodeFrame(Kind.Probe, new TextEncoder().encode("mounts"))],
      ["an execution", encodeFrame(m.kind, m.body)],
      ["Start", encodeFrame(Kind.Start)],
    ] as const
  ) {
    await t.step(name, async () => {
      const x = await session({ configure: false });
      x.s.sendRaw(frame);
      assert.equal(await x.run, 1);
      assert.match(x.worker.problem ?? "", /accepts only/);
      assert.deepEqual(x.root.ops, ["release"]);
    });
  }
});

Deno.test("a second configuration, or a broker that closes the stream, leave the root to release", async () => {
  const x = await session();
  x.s.sendRaw(encodeFrame(Kind.RootConfig, encodeRootConfig(defaultRootConfig())));
  assert.equal(await x.run, 1);
  assert.deepEqual(x.root.ops, ["layout", "bootstrap", "assembly", "release"]);
  const y = await session();
  y.s.endHost();
  assert.equal(await y.run, 1);
  assert.deepEqual(y.root.ops, ["layout", "bootstrap", "assembly", "release"]);
});

Deno.test("a broker that closes its end while the worker probes still receives the queued replies", async () => {
  const x = await session();
  x.s.sendRaw(encodeFrame(Kind.Probe, new TextEncoder().encode("echo-args z")));
  x.s.sendRaw(encodeFrame(Kind.Ping));
  x.s.endHost();
  const a = await x.c.receive(2000);
  assert.equal(a.kind, Kind.Report);
  assert.equal((await x.c.receive(2000)).kind, Kind.Pong);
  assert.equal(await x.run, 1);
});

Deno.test("Ready carries the guest agent's build", async () => {
  const s = new MemoryStream();
  const run = new Worker(s.guest, { ops: new FakeRoot(), log: silentLogger() }).run();
  const c = await FramingClient.attach(s.host);
  assert.deepEqual(await c.configureRoot(defaultRootConfig()), { ready: GUEST_BUILD });
  await c.stop();
  assert.equal(await run, 0);
});

const enc = (t: string) => new TextEncoder().encode(t);
const mapping = (src: string, tgt: string): Mapping => ({ readOnly: false, source: enc(src), target: enc(tgt) });

Deno.test("a mapping table in parts, then Start; a mapping that fails answers MapFailed with the count applied", async () => {
  const x = await session({ config: { ...defaultRootConfig(), mappingCount: 3 } });
  const [part] = encodeMaps([mapping("a", "/a"), mapping("b", "/b")]);
  await x.c.send(Kind.Maps, part!);
  assert.equal((await x.c.receive()).kind, Kind.Mapped);
  await x.c.send(Kind.Start);
  assert.equal(await x.run, 1, "Start before the whole table ends the session");
  assert.match(x.worker.problem ?? "", /Start before the mapping table/);

  const y = await session({ config: { ...defaultRootConfig(), mappingCount: 2 }, root: { failMapping: 1 } });
  const [p2] = encodeMaps([mapping("a", "/a"), mapping("b", "/b")]);
  await y.c.send(Kind.Maps, p2!);
  const mf = await y.c.receive();
  assert.equal(mf.kind, Kind.MapFailed);
  assert.equal(new DataView(mf.body.buffer, mf.body.byteOffset).getUint32(0, true), 1);
  await y.c.stop();
  assert.equal(await y.run, 0);

  const z = await session({ config: { ...defaultRootConfig(), mappingCount: 1 } });
  await z.c.send(Kind.Maps, encodeMaps([mapping("a", "/a")])[0]!);
  assert.equal((await z.c.receive()).kind, Kind.Mapped);
  await z.c.send(Kind.Start);
  assert.equal((await z.c.receive()).kind, Kind.Started);
  assert.deepEqual(z.root.ops.slice(-2), ["map", "start"]);
  await z.c.stop();
  assert.equal(await z.run, 0);
});

Deno.test("a probe that does not decode is answered with ProbeFailed and leaves the stream intact", async () => {
  const x = await session();
  await x.c.send(Kind.Probe, new TextEncoder().encode("Bad Probe"));
  const m = await x.c.receive(2000);
  assert.equal(m.kind, Kind.ProbeFailed);
  await x.c.ping();
  assert.deepEqual(await x.c.probe({ name: "nope", args: [] }), { problem: "unknown probe nope" });
  await x.c.stop();
  assert.equal(await x.run, 0);
});
