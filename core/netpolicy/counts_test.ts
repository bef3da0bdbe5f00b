import assert from "node:assert/strict";
import { countDifferences, countsOfNftJson, ListingMalformed, type RuleCounts } from "./counts.ts";

// The shape `nft -j list table bridge bcd_instances` prints (nftables 1.0.6), cut to what counting reads.
const LISTING = JSON.stringify({
  nftables: [
    { metainfo: { version: "1.0.6", json_schema_version: 1 } },
    { table: { family: "bridge", name: "bcd_instances", handle: 1 } },
    { set: { family: "bridge", name: "guarded_taps", table: "bcd_instances", type: "ifname", elem: ["bc1", "bc2"] } },
    { set: { family: "bridge", name: "ssh_taps", table: "bcd_instances", type: "ifname" } },
    { chain: { family: "bridge", table: "bcd_instances", name: "forward", hook: "forward", prio: -200 } },
    { chain: { family: "bridge", table: "bcd_instances", name: "bind" } },
    { rule: { family: "bridge", table: "bcd_instances", chain: "forward", expr: [] } },
    { rule: { family: "bridge", table: "bcd_instances", chain: "forward", expr: [] } },
    { rule: { family: "inet", table: "bcd_taps", chain: "forward", expr: [] } },
  ],
});

Deno.test("countsOfNftJson() counts rules per chain and elements per set of its table only", () => {
  assert.deepEqual(countsOfNftJson("bridge bcd_instances", LISTING), {
    chains: { forward: 2, bind: 0 },
    sets: { guarded_taps: 2, ssh_taps: 0 },
  });
});

Deno.test("countsOfNftJson() refuses what is not an nft listing", () => {
  for (const s of ["", "{", "[]", '{"nftables": 3}']) {
    assert.throws(() => countsOfNftJson("inet bcd_taps", s), ListingMalformed, s);
  }
});

Deno.test("countDifferences() names a gone table, a flushed chain or set, and extras", () => {
  const loaded: RuleCounts = {
    "bridge bcd_instances": { chains: { forward: 4, bind: 4 }, sets: { guarded_taps: 2 } },
    "inet bcd_taps": { chains: { input: 1 }, sets: {} },
  };
  assert.deepEqual(countDifferences(loaded, loaded), []);
  assert.deepEqual(countDifferences(loaded, {}), ["table bridge bcd_instances is gone", "table inet bcd_taps is gone"]);
  assert.deepEqual(
    countDifferences(loaded, {
      "bridge bcd_instances": { chains: { forward: 0, bind: 4, extra: 1 }, sets: {} },
      "inet bcd_taps": { chains: { input: 1 }, sets: {} },
    }),
    [
      "bridge bcd_instances chain forward holds 0 rules, 4 loaded",
      "bridge bcd_instances has an extra chain extra",
      "bridge bcd_instances set guarded_taps is gone",
    ],
  );
});
