/**
 * The {@link Nft} contract, one suite run against every implementation: the fake, the real `nft` inside a network
 * namespace this test creates, and the node's helper-backed port over an in-process helper serving each of those.
 */
import assert from "node:assert/strict";
import { type NetPolicy, NetPolicyError, type Nft, NftFailed } from "../../core/netpolicy/mod.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { HelperNft } from "../helper/nft_port.ts";
import { FakeNft } from "./fake_nft.ts";
import { netnsAddresses } from "./host_addresses.ts";
import { Netns, netnsUnavailable } from "../../fixtures/nft/netns.ts";
import { RealNft } from "./real_nft.ts";

interface Subject {
  readonly nft: Nft;
  /** Makes the next apply fail as a refusing `nft -f` would (the fakes; the real nft cannot be told to). */
  readonly failNextApply?: () => void;
  close(): Promise<void>;
}

const NIC = {
  instance: "i-1",
  index: 0,
  bridge: "brt0",
  policy: "private" as const,
  sshFromHostOnly: true,
  mac: "52:54:00:00:00:01",
  addresses: ["10.0.3.7/24", "2001:db8::7/64"],
};
const ONE: NetPolicy = { nics: [NIC] };
const TWO: NetPolicy = {
  nics: [NIC, { ...NIC, instance: "i-2", policy: "none", sshFromHostOnly: false, mac: "52:54:00:00:00:02" }],
};

async function _real(): Promise<Subject & { ns: string }> {
  const nets = new Netns("ct");
  const ns = await nets.add("host");
  await nets.ip(ns, "link", "add", "brt0", "type", "bridge");
  await nets.ip(ns, "addr", "add", "10.0.3.1/24", "dev", "brt0");
  return { ns, nft: new RealNft({ netns: ns, hostAddresses: netnsAddresses(ns) }), close: () => nets.close() };
}

async function _overHelper(inner: () => Promise<Subject>): Promise<Subject> {
  const s = await inner();
  const h = await startTestHelper({ nft: s.nft });
  return {
    nft: new HelperNft(h.client),
    ...(s.failNextApply ? { failNextApply: s.failNextApply } : {}),
    close: async () => {
      await h.close();
      await s.close();
    },
  };
}

function _fake(): Promise<Subject> {
  const nft = new FakeNft({ hostAddresses: ["10.0.3.1"] });
  return Promise.resolve({ nft, failNextApply: () => nft.failApplies(1), close: () => Promise.resolve() });
}
const skip = netnsUnavailable();
const SUBJECTS: [string, () => Promise<Subject>, string | undefined][] = [
  ["FakeNft", _fake, undefined],
  ["HelperNft over a helper with FakeNft", () => _overHelper(_fake), undefined],
  ["RealNft in a network namespace", _real, skip],
  ["HelperNft over a helper with RealNft in a network namespace", () => _overHelper(_real), skip],
];

for (const [name, make, ignore] of SUBJECTS) {
  Deno.test({
    name: `Nft contract: ${name}${ignore ? ` (skipped: ${ignore})` : ""}`,
    ignore: ignore !== undefined,
    fn: async (t) => {
      const s = await make();
      try {
        await t.step("a fresh host lists none of bcd's tables", async () => {
          assert.deepEqual(await s.nft.list(), {});
        });
        await t.step("apply loads the three tables, and list counts exactly what apply says it loaded", async () => {
          const loaded = await s.nft.apply(ONE);
          assert.deepEqual(Object.keys(loaded).sort(), ["arp bcd_taps", "bridge bcd_instances", "inet bcd_taps"]);
          assert.equal(loaded["bridge bcd_instances"]!.sets.host_v4, 1, "the host's address on the NIC's bridge");
          assert.deepEqual(await s.nft.list(), loaded);
        });
        await t.step("a second apply replaces the first", async () => {
          const loaded = await s.nft.apply(TWO);
          assert.equal(loaded["bridge bcd_instances"]!.sets.guarded_taps, 2);
          assert.deepEqual(await s.nft.list(), loaded);
        });
        await t.step("a refused policy changes nothing", async () => {
          const before = await s.nft.list();
          const hostile = { nics: [{ ...NIC, bridge: 'brt0" } flush ruleset' }] } as NetPolicy;
          await assert.rejects(
            s.nft.apply(hostile),
            (e) => e instanceof NetPolicyError,
          );
          assert.deepEqual(await s.nft.list(), before);
        });
        if (s.failNextApply) {
          await t.step("a failed load is NftFailed and changes nothing", async () => {
            const before = await s.nft.list();
            s.failNextApply!();
            await assert.rejects(s.nft.apply(ONE), (e) => e instanceof NftFailed && /fake failure/.test(e.message));
            assert.deepEqual(await s.nft.list(), before);
          });
        }
        await t.step("an empty policy still loads the backstop tables", async () => {
          const loaded = await s.nft.apply({ nics: [] });
          assert.deepEqual(loaded["inet bcd_taps"]!.chains, { input: 1, forward: 2, output: 1 });
          assert.deepEqual(loaded["arp bcd_taps"]!.chains, { input: 1, output: 1 });
          assert.deepEqual(await s.nft.list(), loaded);
        });
      } finally {
        await s.close();
      }
    },
  });
}
