/**
 * HelperNft keeps the Nft port's promise whatever the helper answers: a helper that cannot be reached, or an answer
 * whose figures are not bcd's tables, is `NftFailed` (retried by the keeper), never a `HelperError` that
 * `core/netpolicy` would have to know. The refused-policy and failed-load cases run in the Nft contract suite.
 */
import assert from "node:assert/strict";
import { HelperError } from "../../core/helper/mod.ts";
import { isNftFailure, NftFailed } from "../../core/netpolicy/mod.ts";
import { HelperClient } from "./client.ts";
import { HelperNft } from "./nft_port.ts";

Deno.test("HelperNft: an unreachable helper is NftFailed (an Nft failure the keeper retries), the HelperError its cause", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-nftport-" });
  const client = new HelperClient({ socket: `${dir}/none.sock` });
  try {
    const nft = new HelperNft(client);
    for (const call of [() => nft.list(), () => nft.apply({ nics: [] })]) {
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof NftFailed, String(e));
        assert.ok(isNftFailure(e));
        assert.ok(e.cause instanceof HelperError && e.cause.code === "unreachable", String(e.cause));
        return true;
      });
    }
  } finally {
    client.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("HelperNft: counts naming a table that is not bcd's are NftFailed", async () => {
  const fake = { call: () => Promise.resolve({ counts: { "inet filter": { chains: {}, sets: {} } } }) };
  const nft = new HelperNft(fake as unknown as HelperClient);
  await assert.rejects(nft.list(), (e) => e instanceof NftFailed && /nft\.list: the answer's counts/.test(e.message));
});
