import assert from "node:assert/strict";
import type { bcd } from "../../proto/mod.ts";
import { addressOwners, isGuarded, planNetPolicy } from "./plan.ts";

type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

const NIC = { mac: "52:54:00:00:00:01", bridge: "br0", ipam_addresses: ["10.0.3.7/24"] };

function _spec(id: string, patch: Partial<InstanceSpec> = {}): InstanceSpec {
  return { id, runtime: "libvirt-kvm", state: 1, nics: [NIC], network_policy: 1, ...patch };
}

Deno.test("planNetPolicy() turns each NIC of each instance into a canonical policy entry", () => {
  const { policy, failed } = planNetPolicy(
    [
      _spec("a", { nics: [{ ...NIC, mac: "52:54:00:AA:00:01" }, { bridge: "br1" }], network_policy: 0 }),
      _spec("b", { ssh_from_host_only: true }),
    ],
    undefined,
    new Set(),
  );
  assert.equal(failed.size, 0);
  assert.deepEqual(policy.nics, [
    {
      instance: "a",
      index: 0,
      bridge: "br0",
      policy: "egress",
      sshFromHostOnly: false,
      mac: "52:54:00:aa:00:01",
      addresses: ["10.0.3.7/24"],
    },
    { instance: "a", index: 1, bridge: "br1", policy: "egress", sshFromHostOnly: false, addresses: [] },
    {
      instance: "b",
      index: 0,
      bridge: "br0",
      policy: "private",
      sshFromHostOnly: true,
      mac: "52:54:00:00:00:01",
      addresses: ["10.0.3.7/24"],
    },
  ]);
});

Deno.test("planNetPolicy() fails only the instance whose policy cannot be expressed, saying which NIC and why", async (t) => {
  const rows: [string, Partial<InstanceSpec>, RegExp][] = [
    [
      "PRIVATE without a MAC",
      { nics: [{ ...NIC, mac: "" }] },
      /NIC 0: policy private cannot be expressed .* without a MAC/,
    ],
    ["NONE without IPAM", { network_policy: 2, nics: [{ ...NIC, ipam_addresses: [] }] }, /without IPAM addresses/],
    ["a bridge starting with bc", { network_policy: 0, nics: [{ ...NIC, bridge: "bcnet" }] }, /starts with "bc"/],
    ["a bad MAC under EGRESS", { network_policy: 0, nics: [{ ...NIC, mac: "zz" }] }, /not a MAC address/],
    ["an unknown policy value", { network_policy: 7 as unknown as 0 }, /network_policy 7/],
  ];
  for (const [what, patch, msg] of rows) {
    await t.step(what, () => {
      const { policy, failed } = planNetPolicy([_spec("bad", patch), _spec("good")], undefined, new Set());
      assert.match(failed.get("bad")!, msg);
      assert.deepEqual(policy.nics.map((n) => n.instance), ["good"]);
    });
  }
});

Deno.test("planNetPolicy(): a deleted instance keeps its guard until its domain is gone", () => {
  const first = planNetPolicy([_spec("a"), _spec("b")], undefined, new Set());
  const deleted = planNetPolicy([_spec("a"), _spec("b", { state: 4 })], first.policy, new Set(["a", "b"]));
  assert.deepEqual(deleted.policy.nics.map((n) => n.instance), ["a", "b"]);
  const dropped = planNetPolicy([_spec("a")], deleted.policy, new Set(["a", "b"]));
  assert.deepEqual(dropped.policy.nics.map((n) => n.instance), ["a", "b"], "absent from the spec, domain alive");
  const gone = planNetPolicy([_spec("a")], dropped.policy, new Set(["a"]));
  assert.deepEqual(gone.policy.nics.map((n) => n.instance), ["a"]);
});

Deno.test("isGuarded(): PRIVATE, NONE or ssh_from_host_only", () => {
  assert.ok(isGuarded(_spec("a")));
  assert.ok(isGuarded(_spec("a", { network_policy: 2 })));
  assert.ok(isGuarded(_spec("a", { network_policy: 0, ssh_from_host_only: true })));
  assert.ok(!isGuarded(_spec("a", { network_policy: 0 })));
});

Deno.test("addressOwners(): each guarded address names its instance; one two instances claim names none", () => {
  const { policy } = planNetPolicy(
    [
      _spec("a", { nics: [{ ...NIC, ipam_addresses: ["10.0.3.7/24", "2001:DB8::7/64"] }] }),
      _spec("b", { nics: [{ ...NIC, mac: "52:54:00:00:00:02", ipam_addresses: ["10.0.3.8/24", "10.0.3.7/24"] }] }),
      _spec("c", { network_policy: 0, nics: [{ bridge: "br0", ipam_addresses: ["10.0.3.9/24"] }] }),
    ],
    undefined,
    new Set(),
  );
  assert.deepEqual([...addressOwners(policy)].sort(), [["10.0.3.8", "b"], ["2001:db8::7", "a"]]);
});
