/**
 * The worker's probes behind the session: it runs them while it runs no execution (an abandoned one included),
 * answers every failure of a probe with ProbeFailed and goes on, and refuses facts beyond a Report's 256 KiB.
 */
import assert from "node:assert/strict";
import { decodeMapFailure, defaultRootConfig, encodeMaps, type Facts, Kind, type Probe } from "../core/framing/mod.ts";
import { ExecAbandoned } from "../runtimes/guest/exec_peer.ts";
import { EXECUTING } from "./exec_limits.ts";
import { FakeRoot } from "./fake_root.ts";
import { session, start } from "./_session_harness.ts";

const SH = "/bin/sh";
const enc = (t: string) => new TextEncoder().encode(t);

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for: ${what}`);
}

Deno.test("a probe while an abandoned execution's program still runs is refused; once it ended, it runs", async () => {
  const x = await session();
  const id = 9001n;
  const first = await x.c.execute({ id, generation: 1n }, start([SH, "-c", "sleep 0.4"]), () => {});
  const second = await x.c.execute({ id, generation: 2n }, start([SH, "-c", "true"]), () => {});
  await assert.rejects(first.terminal, ExecAbandoned);
  await second.terminal;
  assert.equal(x.worker.engine.running, 0, "no execution is attached to the host");
  assert.equal(x.worker.engine.count, 1, "the abandoned program runs on");
  assert.deepEqual(await x.c.probe({ name: "contents", args: [] }), { problem: EXECUTING });
  assert.equal(x.root.ops.some((o) => o.startsWith("probe")), false, "the root never saw the probe");
  await waitFor(() => x.worker.engine.count === 0, 3000, "the abandoned program ended");
  const a = await x.c.probe({ name: "contents", args: [] });
  assert.ok("facts" in a);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

class BrokenRoot extends FakeRoot {
  override probe(p: Probe): Promise<Facts> {
    if (p.name === "devices") return Promise.reject(new Error("EIO reading /sys/block"));
    return super.probe(p);
  }
}

Deno.test("a probe that fails or is refused answers ProbeFailed, and the session goes on", async () => {
  const x = await session({ worker: { ops: new BrokenRoot() } });
  assert.deepEqual(await x.c.probe({ name: "devices", args: [] }), {
    problem: "the probe failed: EIO reading /sys/block",
  });
  assert.deepEqual(await x.c.probe({ name: "copy-up", args: ["/etc/os-release"] }), {
    problem: "FILE /etc/os-release is not a relative path of normal components",
  });
  assert.deepEqual(await x.c.probe({ name: "fill", args: ["x"] }), { problem: "fill takes no arguments" });
  assert.deepEqual(await x.c.probe({ name: "rename", args: ["opt/lowerdir"] }), {
    facts: [["outcome", "allowed"]],
  });
  await x.c.ping();
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("facts beyond a Report's 256 KiB answer ProbeFailed", async () => {
  const big = new Uint8Array(160 * 1024).fill(0xab);
  const x = await session({
    root: { cmdline: "nvx_sandbox=1 nvx_layer=distro,0xd0003000,gpt:abcd", firstPartition: big },
    config: { ...defaultRootConfig(), firstPartitionBound: BigInt(big.length) },
  });
  const a = await x.c.probe({ name: "first-partition", args: [] });
  assert.ok("problem" in a);
  assert.match(a.problem, /^the facts hold \d+ bytes, beyond 262144$/);
  await x.c.ping();
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("the mapping probes through the worker, and a host table after map-refused, which the latch refuses", async () => {
  const x = await session({ root: { attaches: 5 }, config: { ...defaultRootConfig(), mappingCount: 1 } });
  const map = await x.c.probe({ name: "map", args: [] });
  assert.ok("facts" in map);
  assert.equal(new Map(map.facts).get("table"), "applied");
  const checks = await x.c.probe({ name: "map-checks", args: [] });
  assert.ok("facts" in checks);
  assert.equal(new Map(checks.facts).get("left"), "none");
  const refused = await x.c.probe({ name: "map-refused", args: [] });
  assert.ok("facts" in refused);
  assert.equal(new Map(refused.facts).get("latched"), "true");
  assert.equal(x.root.latched, true);
  const table = encodeMaps([{ readOnly: false, source: enc("a"), target: enc("/srv/a") }]);
  await x.c.send(Kind.Maps, table[0]!);
  const answer = await x.c.receive();
  assert.equal(answer.kind, Kind.MapFailed);
  assert.deepEqual(decodeMapFailure(answer.body), { applied: 0, problem: "latched" });
  await x.c.stop();
  assert.equal(await x.run, 0);
});
