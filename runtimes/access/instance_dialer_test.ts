import assert from "node:assert/strict";
import { TunnelDialError } from "../../core/access/tunnels.ts";
import { type DialInstance, type HostAddress, InstanceDialer, sameSubnet } from "./instance_dialer.ts";

const HOST: HostAddress[] = [
  { name: "br0", family: "IPv4", address: "10.0.3.1" },
  { name: "br0", family: "IPv6", address: "2001:db8::1" },
  { name: "eth0", family: "IPv4", address: "192.0.2.10" },
];

function dialer(instances: DialInstance[], host = HOST) {
  return new InstanceDialer({ instances: () => instances, hostAddresses: () => host });
}

function refusal(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof TunnelDialError) return e.reason;
    throw e;
  }
  return "routed";
}

Deno.test("sameSubnet() compares IPv4 and IPv6 prefixes", () => {
  assert.ok(sameSubnet("10.0.3.7/24", "10.0.3.1"));
  assert.ok(!sameSubnet("10.0.3.7/24", "10.0.4.1"));
  assert.ok(sameSubnet("2001:db8::7/64", "2001:db8::1"));
  assert.ok(!sameSubnet("2001:db8::7/64", "2001:db9::1"));
  assert.ok(!sameSubnet("10.0.3.7/24", "2001:db8::1"));
});

Deno.test("the route is the instance's address, from the host's address on that NIC's bridge (IPv4 first)", () => {
  const d = dialer([{ id: "i-1", nics: [{ bridge: "br0", ipam_addresses: ["2001:db8::7/64", "10.0.3.7/24"] }] }]);
  assert.deepEqual(d.route("i-1"), { address: "10.0.3.7", from: "10.0.3.1" });
  const v6 = dialer([{ id: "i-1", nics: [{ bridge: "br0", ipam_addresses: ["2001:db8::7/64"] }] }]);
  assert.deepEqual(v6.route("i-1"), { address: "2001:db8::7", from: "2001:db8::1" });
});

Deno.test("a dial is refused for an unknown or deleted instance, an ambiguous address, or no host address", () => {
  const nic = { bridge: "br0", ipam_addresses: ["10.0.3.7/24"] };
  assert.equal(refusal(() => dialer([]).route("i-1")), "instance-unknown");
  assert.equal(refusal(() => dialer([{ id: "i-1", state: 4, nics: [nic] }]).route("i-1")), "instance-unknown");
  assert.equal(
    refusal(() => dialer([{ id: "i-1", nics: [nic] }, { id: "i-2", nics: [nic] }]).route("i-1")),
    "address-ambiguous",
  );
  assert.equal(
    refusal(() => dialer([{ id: "i-1", nics: [{ ...nic, bridge: "br9" }] }]).route("i-1")),
    "no-host-address",
  );
  assert.equal(
    refusal(() => dialer([{ id: "i-1", nics: [{ bridge: "br0", ipam_addresses: ["10.9.9.7/24"] }] }]).route("i-1")),
    "no-host-address",
  );
});

Deno.test("the dial binds its source to the host address it routed from", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  const d = dialer(
    [{ id: "i-1", nics: [{ bridge: "lo", ipam_addresses: ["127.0.0.1/8"] }] }],
    [{ name: "lo", family: "IPv4", address: "127.0.0.2" }],
  );
  const [conn, peer] = await Promise.all([d.dial("i-1", port), l.accept()]);
  try {
    assert.equal((peer.remoteAddr as Deno.NetAddr).hostname, "127.0.0.2");
    await peer.write(new TextEncoder().encode("hi"));
    const r = conn.readable.getReader();
    const { value } = await r.read();
    assert.equal(new TextDecoder().decode(value), "hi");
    r.releaseLock();
  } finally {
    conn.close();
    peer.close();
    l.close();
  }
  await assert.rejects(
    () => d.dial("i-1", port),
    (e) => e instanceof TunnelDialError && e.reason === "dial-failed",
  );
});
