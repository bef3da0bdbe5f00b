import assert from "node:assert/strict";
import { memoryLogger } from "../../core/log/mod.ts";
import { FakeNft } from "./fake_nft.ts";
import { NETWORK_CAPABILITIES, NodeNetwork } from "./node_network.ts";

Deno.test("NodeNetwork.prepare() loads the tables on a fresh host and advertises both capabilities", async () => {
  const nft = new FakeNft();
  const caps = await new NodeNetwork(nft, memoryLogger().logger).prepare();
  assert.deepEqual(caps, NETWORK_CAPABILITIES);
  assert.equal(nft.loaded.length, 1);
  assert.deepEqual(Object.keys(await nft.list()).sort(), ["arp bcd_taps", "bridge bcd_instances", "inet bcd_taps"]);
});

Deno.test("NodeNetwork.prepare() leaves tables a previous daemon loaded, so running guests keep their guard", async () => {
  const nft = new FakeNft();
  await nft.apply({
    nics: [{
      instance: "i-1",
      index: 0,
      bridge: "br0",
      policy: "none",
      sshFromHostOnly: false,
      mac: "52:54:00:00:00:01",
      addresses: ["10.0.3.7/24"],
    }],
  });
  const caps = await new NodeNetwork(nft, memoryLogger().logger).prepare();
  assert.deepEqual(caps, NETWORK_CAPABILITIES);
  assert.equal(nft.loaded.length, 1, "nothing reloaded");
  assert.equal((await nft.list())["bridge bcd_instances"]!.sets.guarded_taps, 1);
});

Deno.test("NodeNetwork.prepare(): a host whose nft cannot load the tables advertises neither capability, with a warning", async () => {
  const nft = new FakeNft();
  nft.failApplies(1);
  const mem = memoryLogger("warn");
  assert.deepEqual(await new NodeNetwork(nft, mem.logger).prepare(), []);
  assert.ok(mem.lines.some((l) => /not advertised/.test(String(l.msg))));
});
