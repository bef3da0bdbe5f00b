import assert from "node:assert/strict";
import { memoryLogger } from "../../core/log/mod.ts";
import { INTEGRITY_INTERVAL_MS, type NetPolicy, NftKeeper } from "../../core/netpolicy/mod.ts";
import { FakeNft } from "./fake_nft.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

const POLICY: NetPolicy = {
  nics: [{
    instance: "i-1",
    index: 0,
    bridge: "br0",
    policy: "private",
    sshFromHostOnly: true,
    mac: "52:54:00:00:00:01",
    addresses: ["10.0.3.7/24"],
  }],
};

function _setup() {
  const clock = new FakeClock();
  const nft = new FakeNft({ hostAddresses: ["10.0.3.1"] });
  const mem = memoryLogger("warn");
  const keeper = new NftKeeper(nft, { clock, log: mem.logger });
  return { nft, keeper, lines: mem.lines, advance: (ms: number) => clock.advance(ms) };
}

Deno.test("NftKeeper.ensure() loads a policy once and again only when it changed", async () => {
  const { nft, keeper } = _setup();
  await keeper.ensure(POLICY);
  await keeper.ensure(structuredClone(POLICY));
  assert.equal(nft.loaded.length, 1);
  assert.ok(keeper.loaded);
  await keeper.ensure({ nics: [] });
  assert.equal(nft.loaded.length, 2);
});

Deno.test("NftKeeper.tick() checks every 5 s of the injected clock, not before", async () => {
  const { nft, keeper, advance } = _setup();
  assert.equal(await keeper.tick(), undefined, "nothing loaded: nothing to check");
  await keeper.ensure(POLICY);
  await advance(INTEGRITY_INTERVAL_MS - 1);
  assert.equal(await keeper.tick(), undefined, "a load counts as a check");
  await advance(1);
  assert.deepEqual(await keeper.tick(), { kind: "intact" });
  await advance(INTEGRITY_INTERVAL_MS - 1);
  assert.equal(await keeper.tick(), undefined);
  await advance(1);
  assert.deepEqual(await keeper.tick(), { kind: "intact" });
  assert.equal(nft.lists, 2);
});

Deno.test("NftKeeper: after `flush ruleset` the next check reloads the last policy itself", async () => {
  const { nft, keeper, lines, advance } = _setup();
  await keeper.ensure(POLICY);
  nft.flushRuleset();
  await advance(INTEGRITY_INTERVAL_MS);
  const r = await keeper.tick();
  assert.equal(r?.kind, "reloaded");
  assert.ok(r?.kind === "reloaded" && r.differences.includes("table bridge bcd_instances is gone"));
  assert.equal(nft.loaded.length, 2);
  assert.equal(nft.loaded[1], nft.loaded[0]);
  assert.ok(lines.some((l) => l.level === "warn" && /changed/.test(String(l.msg))));
  await advance(INTEGRITY_INTERVAL_MS);
  assert.deepEqual(await keeper.tick(), { kind: "intact" });
});

Deno.test("NftKeeper: a flushed chain is found by its rule count", async () => {
  const { nft, keeper } = _setup();
  await keeper.ensure(POLICY);
  nft.flushChain("bridge bcd_instances", "from_tap");
  const r = await keeper.check();
  assert.ok(
    r?.kind === "reloaded" && r.differences[0] === "bridge bcd_instances chain from_tap holds 0 rules, 21 loaded",
  );
});

Deno.test("NftKeeper: a failed reload is reported, leaves loaded false, and the next pass's ensure() retries", async () => {
  const { nft, keeper, advance } = _setup();
  await keeper.ensure(POLICY);
  nft.flushRuleset();
  nft.failApplies(1);
  await advance(INTEGRITY_INTERVAL_MS);
  const r = await keeper.tick();
  assert.ok(r?.kind === "failed" && /fake failure/.test(r.error));
  assert.ok(!keeper.loaded);
  await keeper.ensure(POLICY);
  assert.ok(keeper.loaded);
  assert.deepEqual(await keeper.check(), { kind: "intact" });
});

Deno.test("NftKeeper.ensure() throws a failed load and keeps the tables as they were", async () => {
  const { nft, keeper } = _setup();
  await keeper.ensure(POLICY);
  nft.failApplies(1);
  await assert.rejects(keeper.ensure({ nics: [] }), /fake failure/);
  assert.ok(!keeper.loaded);
  assert.equal(nft.loaded.length, 1);
  assert.equal((await nft.list())["bridge bcd_instances"]!.sets.guarded_taps, 1);
});
