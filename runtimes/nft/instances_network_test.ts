/**
 * The instances converger with its network rules (000 §Instances): `NetworkRules` over an `NftKeeper` over the fake
 * nft, and the in-memory runtime. The rules load before any domain starts; a policy that cannot be expressed fails
 * its instance and stops it; rules that do not load fail the guarded instances, keep egress ones running, and the
 * next pass retries; a deleted instance keeps its guard until its domain is gone.
 */
import assert from "node:assert/strict";
import type { bcd } from "../../proto/mod.ts";
import { ConvergenceEngine } from "../../core/converge/engine.ts";
import { InstancesConverger, tapName } from "../../core/converge/instances/mod.ts";
import { MemoryRuntime } from "../../core/converge/instances/fake_runtime.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { type NetPolicy, NetworkRules, NftKeeper, type RuleCounts } from "../../core/netpolicy/mod.ts";
import { FakeNft } from "./fake_nft.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

const NIC = { mac: "52:54:00:00:00:01", bridge: "br0", ipam_addresses: ["10.0.3.7/24"] };

function vm(id: string, patch: Partial<InstanceSpec> = {}): InstanceSpec {
  return { id, runtime: "libvirt-kvm", state: 1, vcpus: 1, memory_bytes: 2 ** 30, nics: [NIC], ...patch };
}

/** The fake nft, logging its loads into the runtime's call list so the order shows. */
class OrderedNft extends FakeNft {
  constructor(private readonly calls: string[]) {
    super({ hostAddresses: ["10.0.3.1"] });
  }
  override async apply(policy: NetPolicy): Promise<RuleCounts> {
    const r = await super.apply(policy);
    this.calls.push(`nft.apply ${policy.nics.map((n) => n.instance).join(",")}`);
    return r;
  }
}

function setup() {
  const rt = new MemoryRuntime("libvirt-kvm");
  const nft = new OrderedNft(rt.calls);
  const keeper = new NftKeeper(nft, { clock: new FakeClock(), log: silentLogger() });
  const conv = new InstancesConverger([rt], { network: new NetworkRules(keeper, silentLogger()) });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: InstanceSpec[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
    const s = await engine.pass();
    return s.sections.find((x) => x.section === "instances")!;
  };
  return { rt, nft, keeper, conv, pass };
}

Deno.test("instances: the rules are loaded before any domain is defined or started", async () => {
  const { rt, pass } = setup();
  const s = await pass([vm("a", { network_policy: 1 }), vm("b")]);
  assert.equal(s.state, "CONVERGED");
  assert.deepEqual(rt.calls, ["nft.apply a,b", "define a", "start a", "define b", "start b"]);
});

Deno.test("instances: a policy that cannot be expressed fails that instance, stops it if it runs, and no other", async () => {
  const { rt, nft, pass, conv } = setup();
  await pass([vm("a", { network_policy: 1 }), vm("b")]);
  const s = await pass([vm("a", { network_policy: 1, nics: [{ ...NIC, mac: "" }] }), vm("b")]);
  assert.equal(s.state, "FAILED");
  assert.match(
    s.message,
    /a: network policy: instance a NIC 0: policy private cannot be expressed for a NIC without a MAC/,
  );
  assert.equal(rt.domains.get("a")!.state, "stopped");
  assert.equal(rt.domains.get("b")!.state, "running");
  assert.ok(!nft.loaded.at(-1)!.includes(tapName("a", 0)), "its NICs left the rules");
  const a = conv.listing().instances.find((i) => i.id === "a")!;
  assert.match(a.message, /^network-policy: /);
  const bridge = await pass([vm("c", { nics: [{ ...NIC, bridge: "bcbr0" }] })]);
  assert.match(bridge.message, /c: .*bridge "bcbr0" starts with "bc"/);
  assert.ok(!rt.domains.has("c"), "never defined");
});

Deno.test("instances: rules that do not load fail the guarded instances, keep egress running, and retry next pass", async () => {
  const { rt, nft, pass, keeper } = setup();
  nft.failApplies(1);
  const s = await pass([vm("guarded", { ssh_from_host_only: true }), vm("egress")]);
  assert.equal(s.state, "PROGRESSING");
  assert.match(s.message, /network rules did not load: .*fake failure/);
  assert.ok(!rt.domains.has("guarded"), "a guarded instance never starts outside its rules");
  assert.equal(rt.domains.get("egress")!.state, "running");
  const again = await pass([vm("guarded", { ssh_from_host_only: true }), vm("egress")]);
  assert.equal(again.state, "CONVERGED");
  assert.equal(rt.domains.get("guarded")!.state, "running");
  assert.ok(keeper.loaded);
});

Deno.test("instances: a deleted instance keeps its guard until its domain is gone", async () => {
  const { rt, nft, pass } = setup();
  await pass([vm("a"), vm("b", { network_policy: 2 })]);
  await pass([vm("a"), vm("b", { network_policy: 2, state: 4 })]);
  assert.equal(rt.calls.at(-1), "delete b");
  assert.equal(
    rt.calls.filter((c) => c.startsWith("nft.apply")).length,
    1,
    "b's guard stayed while its domain was there",
  );
  assert.ok(nft.loaded.at(-1)!.includes(tapName("b", 0)));
  await pass([vm("a"), vm("b", { network_policy: 2, state: 4 })]);
  assert.equal(rt.calls.at(-1), "nft.apply a", "the next pass drops it, its domain gone");
  assert.ok(!nft.loaded.at(-1)!.includes(tapName("b", 0)));
});
