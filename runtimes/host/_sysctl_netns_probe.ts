/**
 * Test support for `host_units_contract_test.ts`: runs one {@link SysctlFiles} call (`read` or `apply`) in the
 * network namespace it was started in (`ip netns exec`), with the real `/proc/sys` and bcd's file under the `/etc`
 * root given as the first argument, and prints the result as JSON.
 *
 * @module
 */
import { SysctlFiles } from "./sysctl_files.ts";

const [etc, method, arg] = Deno.args;
if (!etc || !arg || (method !== "read" && method !== "apply")) {
  console.error("usage: _sysctl_netns_probe.ts ETC read|apply JSON");
  Deno.exit(2);
}
const port = new SysctlFiles({ etc });
const result = method === "read" ? await port.read(JSON.parse(arg)) : await port.apply(JSON.parse(arg));
console.log(JSON.stringify(result));
