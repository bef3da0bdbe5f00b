/**
 * The host's own addresses on the instances' bridges (000 §Instances: instances may never send from or claim them, and
 * tcp/22 into an `ssh_from_host_only` tap must come from one of them). Root looks them up itself when it renders the
 * ruleset: from the process's interfaces on a host, from `ip -j addr` inside a test's network namespace.
 *
 * @module
 */
import { NftFailed } from "../../core/netpolicy/mod.ts";

/** The bare addresses (link-local ones included) on the interfaces named `bridges`. */
export type HostAddressSource = (bridges: readonly string[]) => Promise<string[]>;

/** From `Deno.networkInterfaces()`: this process's network namespace. */
export function interfaceAddresses(bridges: readonly string[]): Promise<string[]> {
  const want = new Set(bridges);
  const out = Deno.networkInterfaces().filter((i) => want.has(i.name)).map((i) => i.address.replace(/%.*$/, ""));
  return Promise.resolve([...new Set(out)]);
}

/** From `ip -j addr show` inside network namespace `netns` (tests). */
export function netnsAddresses(netns: string): HostAddressSource {
  return async (bridges) => {
    const r = await new Deno.Command("ip", { args: ["-n", netns, "-j", "addr", "show"], stdin: "null" }).output();
    if (r.code !== 0) throw new NftFailed(`ip -n ${netns} addr show failed: ${new TextDecoder().decode(r.stderr)}`);
    const want = new Set(bridges);
    const links = JSON.parse(new TextDecoder().decode(r.stdout)) as {
      ifname: string;
      addr_info?: { local: string }[];
    }[];
    return links.filter((l) => want.has(l.ifname)).flatMap((l) => (l.addr_info ?? []).map((a) => a.local));
  };
}
