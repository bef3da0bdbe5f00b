/**
 * `deno task test:nft`, part one: the network policy proven with real packets in network namespaces this test makes
 * (000 §Instances). The ruleset is rendered by `core/netpolicy` and loaded by the real `nft` through `NftKeeper`;
 * every row of the truth table is a frame really sent and really seen, or not, on the other side. Then the
 * integrity check: `nft flush ruleset` by hand, a spoofed frame now passes, and at the next 5-second check (the clock
 * is injected) the keeper reloads the rules and the whole table holds again.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../../../core/log/mod.ts";
import { INTEGRITY_INTERVAL_MS, NftKeeper } from "../../../core/netpolicy/mod.ts";
import { netnsAddresses } from "../host_addresses.ts";
import { netnsUnavailable } from "../netns_harness.ts";
import { RealNft } from "../real_nft.ts";
import { buildTopology, macOf } from "./topology.ts";
import { type Row, runRows, truthTable } from "./truth_table.ts";
import { FakeClock } from "../../../fixtures/clock/fake_clock.ts";

function _python(): string | undefined {
  try {
    const ok =
      new Deno.Command("python3", { args: ["-c", "import socket; socket.AF_PACKET"], stdout: "null", stderr: "null" })
        .outputSync().success;
    return ok ? undefined : "python3 has no AF_PACKET sockets";
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "python3 is not installed";
    throw e;
  }
}

const skip = netnsUnavailable() ?? _python();
if (skip) console.error(`nft packet tests skipped: ${skip}`);

async function _check(t: Deno.TestContext, rows: Row[], label: string): Promise<void> {
  const results = await runRows(rows);
  for (const [i, r] of rows.entries()) {
    await t.step(`${label}: ${r.name}`, () => {
      const got = results[i]!;
      assert.ok(got.canarySeen, `the canary of "${r.name}" never arrived: the harness, not the rule, is broken`);
      assert.equal(got.probeSeen, r.expect, `${r.name}: probe ${got.probeSeen ? "seen" : "not seen"}`);
    });
  }
}

Deno.test({
  name: `nftables truth table with real packets, then flush ruleset and the 5 s check reloads it${
    skip ? ` (skipped: ${skip})` : ""
  }`,
  ignore: skip !== undefined,
  fn: async (t) => {
    const topo = await buildTopology();
    try {
      const clock = new FakeClock();
      const mem = memoryLogger("warn");
      const nft = new RealNft({ netns: topo.host, hostAddresses: netnsAddresses(topo.host) });
      const keeper = new NftKeeper(nft, { clock, log: mem.logger });
      const macs = [await macOf(topo.nets, topo.host, topo.offTap), await macOf(topo.nets, topo.host, "xg0")] as const;
      const rows = truthTable(topo, ...macs);
      const bare = await runRows(rows);
      await t.step("without the rules every probe gets through, so each drop below is the rules' doing", () => {
        const all = rows.map((r) => `${r.name}: true`);
        assert.deepEqual(bare.map((r, i) => `${rows[i]!.name}: ${r.probeSeen && r.canarySeen}`), all);
      });
      await keeper.ensure(topo.policy);
      await _check(t, truthTable(topo, ...macs), "loaded");

      await topo.nets.exec(topo.host, "nft", ["flush", "ruleset"]);
      const spoof = rows.filter((r) =>
        r.name === "spoofed IPv4 source is dropped" || r.name === "tcp/22 from a neighbour fails"
      );
      const open = await runRows(spoof);
      await t.step("after nft flush ruleset, a spoofed source and tcp/22 from a neighbour get through", () => {
        assert.deepEqual(open, spoof.map(() => ({ probeSeen: true, canarySeen: true })));
      });
      assert.equal(await keeper.tick(), undefined, "the check is not due before 5 s");
      await clock.advance(INTEGRITY_INTERVAL_MS);
      const r = await keeper.tick();
      await t.step("the next 5 s check finds the tables gone and loads the last ruleset again", () => {
        assert.equal(r?.kind, "reloaded");
        assert.ok(r?.kind === "reloaded" && r.differences.includes("table bridge bcd_instances is gone"));
        assert.ok(keeper.loaded);
      });
      await _check(
        t,
        truthTable(topo, ...macs),
        "reloaded",
      );

      await topo.nets.exec(topo.host, "nft", ["flush", "chain", "bridge", "bcd_instances", "from_tap"]);
      await clock.advance(INTEGRITY_INTERVAL_MS);
      const chain = await keeper.tick();
      await t.step("a flushed chain is found by its rule count and reloaded", () => {
        assert.ok(
          chain?.kind === "reloaded" &&
            chain.differences[0] === "bridge bcd_instances chain from_tap holds 0 rules, 21 loaded",
        );
      });
      await clock.advance(INTEGRITY_INTERVAL_MS);
      assert.deepEqual(await keeper.tick(), { kind: "intact" });
    } finally {
      await topo.nets.close();
    }
  },
});
