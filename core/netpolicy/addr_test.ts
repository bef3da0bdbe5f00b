import assert from "node:assert/strict";
import {
  contains,
  eui64LinkLocal,
  formatAddress,
  formatCidr,
  ipamProblem,
  macProblem,
  networkOf,
  parseCidr,
  parseMac,
} from "./addr.ts";

Deno.test("parseCidr() reads IPv4 and IPv6 with and without a prefix, and prints them canonically", async (t) => {
  const rows: [string, string][] = [
    ["10.0.3.7/24", "10.0.3.7/24"],
    ["10.0.3.7", "10.0.3.7"],
    ["10.0.3.7/32", "10.0.3.7"],
    ["2001:DB8:0:0:0:0:0:7/64", "2001:db8::7/64"],
    ["2001:db8::", "2001:db8::"],
    ["::", "::"],
    ["::1", "::1"],
    ["fe80::5054:ff:fe00:1", "fe80::5054:ff:fe00:1"],
    ["2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"],
    ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1"],
    ["::ffff:10.0.0.1", "::ffff:a00:1"],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
  ];
  for (const [inp, want] of rows) {
    await t.step(inp, () => assert.equal(formatCidr(parseCidr(inp)!), want));
  }
});

Deno.test("parseCidr() refuses what is not an address, before anything is built from it", async (t) => {
  const bad = [
    "",
    "10.0.0.1/33",
    "10.0.0.01",
    "10.0.0",
    "10.0.0.1.2",
    "256.0.0.1",
    "10.0.0.1/",
    "10.0.0.1/024",
    "fe80::1%eth0",
    "1::2::3",
    "1:2:3:4:5:6:7:8:9",
    "12345::",
    "2001:db8::/129",
    "10.0.0.1/24; flush ruleset",
    '10.0.0.1" } drop',
    "10.0.0.1\n",
    "x".repeat(100),
  ];
  for (const s of bad) await t.step(JSON.stringify(s), () => assert.equal(parseCidr(s), undefined));
});

Deno.test("networkOf() clears host bits; contains() nests prefixes", () => {
  assert.equal(formatCidr(networkOf(parseCidr("10.0.3.7/24")!)), "10.0.3.0/24");
  assert.equal(formatCidr(networkOf(parseCidr("2001:db8::7/64")!)), "2001:db8::/64");
  assert.ok(contains(parseCidr("10.0.0.0/16")!, parseCidr("10.0.3.0/24")!));
  assert.ok(!contains(parseCidr("10.0.3.0/24")!, parseCidr("10.0.0.0/16")!));
  assert.ok(!contains(parseCidr("10.0.0.0/8")!, parseCidr("::1")!));
});

Deno.test("eui64LinkLocal() is RFC 4291's link-local from a MAC (U/L bit flipped, ff:fe inserted)", () => {
  assert.equal(formatAddress(6, eui64LinkLocal(parseMac("52:54:00:12:34:56")!)), "fe80::5054:ff:fe12:3456");
  assert.equal(formatAddress(6, eui64LinkLocal(parseMac("00:00:5e:00:53:01")!)), "fe80::200:5eff:fe00:5301");
});

Deno.test("MACs: only six hex pairs; a group or all-zero MAC cannot be a NIC's own", () => {
  for (const s of ["52:54:00:00:00:1", "52-54-00-00-00-01", "52:54:00:00:00:01:02", "52:54:00:00:00:0g", ""]) {
    assert.equal(parseMac(s), undefined, s);
  }
  assert.match(macProblem(parseMac("01:00:5e:00:00:01")!)!, /group/);
  assert.match(macProblem(parseMac("ff:ff:ff:ff:ff:ff")!)!, /group/);
  assert.match(macProblem(parseMac("00:00:00:00:00:00")!)!, /zeros/);
  assert.equal(macProblem(parseMac("52:54:00:00:00:01")!), undefined);
});

Deno.test("ipamProblem() refuses addresses no NIC may be guarded by", () => {
  for (const s of ["0.0.0.0", "127.0.0.1/8", "224.0.0.5", "255.255.255.255", "::", "::1", "ff02::1", "fe80::1/64"]) {
    assert.notEqual(ipamProblem(parseCidr(s)!), undefined, s);
  }
  for (const s of ["10.0.3.7/24", "192.0.2.1", "2001:db8::7/64"]) {
    assert.equal(ipamProblem(parseCidr(s)!), undefined, s);
  }
});
