import assert from "node:assert/strict";
import { tapName } from "../converge/instances/tap_name.ts";
import { NetPolicyError, type NicPolicy } from "./policy.ts";
import { renderRuleset } from "./ruleset.ts";

const NIC: NicPolicy = {
  instance: "i-1",
  index: 0,
  bridge: "br0",
  policy: "private",
  sshFromHostOnly: true,
  mac: "52:54:00:00:00:01",
  addresses: ["10.0.3.7/24", "2001:db8::7/64"],
};

function _with(patch: Record<string, unknown>): NicPolicy {
  return { ...NIC, ...patch } as NicPolicy;
}

Deno.test("renderRuleset() refuses hostile names and addresses before any text is built", async (t) => {
  const rows: [string, Record<string, unknown>, RegExp][] = [
    ["a bridge with a quote", { bridge: 'br0" drop' }, /bridge .* is not an interface name/],
    ["a bridge with a newline", { bridge: "br0\nflush ruleset" }, /not an interface name/],
    ["a bridge over 15 bytes", { bridge: "b".repeat(16) }, /not an interface name/],
    ["a bridge named ..", { bridge: ".." }, /not an interface name/],
    ["a bridge starting with bc", { bridge: "bcbr0" }, /starts with "bc"/],
    ["an instance id with a brace", { instance: "i-1 } table" }, /not an instance id/],
    ["an instance id with a newline", { instance: "i-1\nflush ruleset" }, /not an instance id/],
    ["an empty instance id", { instance: "" }, /not an instance id/],
    ["a NIC index past the tap name's digits", { index: 36 ** 3 }, /outside/],
    ["a fractional NIC index", { index: 0.5 }, /not a NIC index/],
    ["a MAC with trailing text", { mac: "52:54:00:00:00:01 } drop" }, /is not a MAC address/],
    ["a broadcast MAC", { mac: "ff:ff:ff:ff:ff:ff" }, /group/],
    ["an address with a statement", { addresses: ["10.0.3.7/24; flush ruleset"] }, /not an IPv4 or IPv6 address/],
    ["an address with a zone", { addresses: ["fe80::1%br0"] }, /not an IPv4 or IPv6 address/],
    ["a loopback address", { addresses: ["127.0.0.1/8"] }, /loopback/],
    ["a link-local IPAM address", { addresses: ["fe80::7/64"] }, /link-local/],
    ["a number as an address", { addresses: [167772161] }, /not an IPv4 or IPv6 address/],
    ["too many addresses", { addresses: Array.from({ length: 33 }, (_, i) => `10.0.${i}.7/24`) }, /at most 32/],
    ["an unknown policy", { policy: "open" }, /policy "open" is not one of/],
    ["PRIVATE without a MAC", { mac: undefined }, /cannot be expressed for a NIC without a MAC/],
    ["NONE without IPAM addresses", { policy: "none", addresses: [] }, /without IPAM addresses/],
    ["an unknown field", { rule: "accept" }, /unknown field/],
    ["a non-boolean ssh flag", { sshFromHostOnly: "yes" }, /not a boolean/],
  ];
  for (const [what, patch, msg] of rows) {
    await t.step(what, () => {
      const nic = _with(patch);
      if ("mac" in patch && patch.mac === undefined) delete (nic as { mac?: string }).mac;
      assert.throws(
        () => renderRuleset({ nics: [nic] }, ["10.0.3.1"]),
        (e) => e instanceof NetPolicyError && msg.test(e.message),
      );
    });
  }
  await t.step("a host address with a prefix or a statement", () => {
    for (const h of ["10.0.3.1/24", "10.0.3.1; flush ruleset", "br0"]) {
      assert.throws(() => renderRuleset({ nics: [NIC] }, [h]), NetPolicyError, h);
    }
  });
  await t.step("one NIC listed twice", () => {
    assert.throws(() => renderRuleset({ nics: [NIC, NIC] }, []), /lists NIC 0 twice/);
  });
});

Deno.test("renderRuleset() replaces each table atomically in one text: add, delete, then the full table", () => {
  const { text } = renderRuleset({ nics: [NIC] }, ["10.0.3.1"]);
  const heads = text.split("\n").filter((l) => /^(add|delete) table|^table /.test(l));
  assert.deepEqual(heads, [
    "add table bridge bcd_instances",
    "delete table bridge bcd_instances",
    "table bridge bcd_instances {",
    "add table inet bcd_taps",
    "delete table inet bcd_taps",
    "table inet bcd_taps {",
    "add table arp bcd_taps",
    "delete table arp bcd_taps",
    "table arp bcd_taps {",
  ]);
  assert.ok(!/flush ruleset/.test(text), "never touches other tables");
});

Deno.test("renderRuleset() puts the ssh_from_host_only drops ahead of every other rule of their chains", () => {
  const { text } = renderRuleset({ nics: [NIC] }, ["10.0.3.1", "fe80::1"]);
  const chain = (name: string) => text.split(`\tchain ${name} {\n`)[1]!.split("\t}\n")[0]!.split("\n").slice(1);
  assert.match(chain("forward")[0]!, /^\t\toifname @ssh_taps tcp dport 22 drop$/);
  assert.match(chain("output")[0]!, /ether type ip tcp dport 22 ip saddr != @host_v4 drop/);
  assert.match(chain("output")[1]!, /ether type ip6 tcp dport 22 ip6 saddr != @host_v6 drop/);
});

Deno.test("renderRuleset() drops tcp/22 of a family with no host address outright", () => {
  const { text } = renderRuleset({ nics: [NIC] }, ["10.0.3.1"]);
  assert.match(text, /oifname @ssh_taps ether type ip6 tcp dport 22 drop\n/);
  assert.match(text, /oifname @ssh_taps ether type ip tcp dport 22 ip saddr != @host_v4 drop\n/);
});

Deno.test("renderRuleset() binds each guarded address to its tap, the EUI-64 link-local and DHCP sources included", () => {
  const { text, expect } = renderRuleset({ nics: [NIC] }, ["10.0.3.1"]);
  const tap = tapName("i-1", 0);
  for (
    const el of [
      `"${tap}" . 52:54:00:00:00:01`,
      `"${tap}" . 10.0.3.7`,
      `"${tap}" . 0.0.0.0`,
      `"${tap}" . 2001:db8::7`,
      `"${tap}" . fe80::5054:ff:fe00:1`,
      `"${tap}" . ::`,
      `"${tap}" . 0xfe80000000000000505400fffe000001`,
      `"${tap}" . 10.0.3.0/24`,
      `"${tap}" . 255.255.255.255`,
      `"${tap}" . ff02::1:2`,
    ]
  ) assert.ok(text.includes(`${el}`), el);
  // The host's 10.0.3.1 lies inside the NIC's subnet: the reach set keeps only the subnet (nft refuses overlaps).
  assert.ok(!text.includes(`"${tap}" . 10.0.3.1`));
  const sets = expect["bridge bcd_instances"]!.sets;
  assert.equal(sets.v4_reach, 2);
  assert.equal(sets.v4_bind, 2);
  assert.equal(sets.v6_bind, 3);
});

Deno.test("renderRuleset(): an EGRESS NIC without a MAC or addresses is not guarded; NONE reaches only the host", () => {
  const bare: NicPolicy = {
    instance: "i-2",
    index: 0,
    bridge: "br0",
    policy: "egress",
    sshFromHostOnly: false,
    addresses: [],
  };
  const none: NicPolicy = { ...NIC, instance: "i-3", policy: "none", sshFromHostOnly: false };
  const { text, expect } = renderRuleset({ nics: [bare, none] }, ["10.0.3.1"]);
  assert.ok(!text.includes(`"${tapName("i-2", 0)}"`));
  const t3 = tapName("i-3", 0);
  assert.ok(text.includes(`"${t3}" . 10.0.3.1`) && !text.includes(`"${t3}" . 10.0.3.0/24`));
  assert.equal(expect["bridge bcd_instances"]!.sets.guarded_taps, 1);
  assert.equal(expect["bridge bcd_instances"]!.sets.ssh_taps, 0);
});

Deno.test("renderRuleset(): the rules are fixed, so 1,000 instances add set elements, not rules", () => {
  const one = renderRuleset({ nics: [NIC] }, ["10.0.0.1"]).expect["bridge bcd_instances"]!;
  const nics = Array.from({ length: 1000 }, (_, i) => ({
    ...NIC,
    instance: `i-${i}`,
    mac: `52:54:00:00:${(i >> 8).toString(16).padStart(2, "0")}:${(i & 255).toString(16).padStart(2, "0")}`,
    addresses: [`10.${i >> 8}.${i & 255}.7/24`],
  }));
  const many = renderRuleset({ nics }, ["10.0.0.1"]).expect["bridge bcd_instances"]!;
  assert.deepEqual(many.chains, one.chains);
  assert.equal(many.sets.guarded_taps, 1000);
});

Deno.test("renderRuleset() renders a NIC it rendered before against the host addresses of this call, not the last", () => {
  const a = renderRuleset({ nics: [NIC] }, ["10.0.3.1"]).text;
  const b = renderRuleset({ nics: [NIC] }, ["10.0.9.1"]).text;
  assert.notEqual(a, b);
  assert.match(b, /10\.0\.9\.1/);
  assert.doesNotMatch(b, /10\.0\.3\.1\b/);
  assert.equal(renderRuleset({ nics: [NIC] }, ["10.0.3.1"]).text, a);
});

Deno.test("renderRuleset() refuses an address it refused before, and a NIC changed since it was rendered is new", () => {
  for (let i = 0; i < 2; i++) {
    assert.throws(
      () => renderRuleset({ nics: [_with({ addresses: ["127.0.0.1/8"] })] }, []),
      (e) => e instanceof NetPolicyError && /loopback/.test(e.message),
    );
  }
  const before = renderRuleset({ nics: [NIC] }, []).text;
  const after = renderRuleset({ nics: [_with({ mac: "52:54:00:00:00:09" })] }, []).text;
  assert.match(after, /52:54:00:00:00:09/);
  assert.doesNotMatch(after, /52:54:00:00:00:01/);
  assert.notEqual(before, after);
});
