/**
 * `deno task test:nft`, part two: golden ruleset texts. The text for 1 and 10 instances (two NICs each) is compared
 * byte for byte with `fixtures/nft/golden_<n>.nft` (`BCD_UPDATE_GOLDEN=1` rewrites them after a deliberate change),
 * and real `nft -c -f` inside a network namespace this test makes accepts the text for 1, 10 and 1,000 instances.
 */
import assert from "node:assert/strict";
import { renderRuleset } from "../../../core/netpolicy/mod.ts";
import { Netns, netnsUnavailable } from "../netns_harness.ts";
import { FLEET_HOST, fleetPolicy } from "./fleet.ts";

const FIX = new URL("../../../fixtures/nft/", import.meta.url).pathname;

for (const n of [1, 10]) {
  Deno.test(`the ruleset text for ${n} instance(s) with two NICs is fixtures/nft/golden_${n}.nft`, async () => {
    const { text } = renderRuleset(fleetPolicy(n), FLEET_HOST);
    const path = `${FIX}golden_${n}.nft`;
    if (Deno.env.get("BCD_UPDATE_GOLDEN") === "1") await Deno.writeTextFile(path, text);
    assert.equal(text, await Deno.readTextFile(path));
  });
}

const skip = netnsUnavailable();
Deno.test({
  name: `nft -c -f accepts the ruleset for 1, 10 and 1,000 instances${skip ? ` (skipped: ${skip})` : ""}`,
  ignore: skip !== undefined,
  fn: async (t) => {
    const nets = new Netns("gd");
    try {
      const ns = await nets.add("h");
      for (const n of [1, 10, 1000]) {
        await t.step(`${n} instance(s)`, async () => {
          const { text, expect } = renderRuleset(fleetPolicy(n), FLEET_HOST);
          await nets.exec(ns, "nft", ["-c", "-f", "-"], text);
          assert.equal(expect["bridge bcd_instances"]!.sets.mac_bind, 2 * n);
        });
      }
      await t.step("and a text with one character changed in a set element is refused", async () => {
        const { text } = renderRuleset(fleetPolicy(1), FLEET_HOST);
        await assert.rejects(
          nets.exec(ns, "nft", ["-c", "-f", "-"], text.replace("52:54:00:00:00:00", "52:54:00:00:00:0g")),
        );
      });
    } finally {
      await nets.close();
    }
  },
});
