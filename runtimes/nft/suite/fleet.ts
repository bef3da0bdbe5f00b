/**
 * Test and benchmark support: a policy for `n` instances with two NICs each, policies in turn `PRIVATE`, `NONE`,
 * `EGRESS`, every third with tcp/22 from the host only, each NIC with an IPv4 and an IPv6 address. `generation` (0–15,
 * default 0) gives every NIC another instance id, MAC and addresses: a fleet no earlier load has seen (the benchmark's
 * cold loads).
 *
 * @module
 */
import type { NetPolicy, NicPolicy, PolicyKind } from "../../../core/netpolicy/mod.ts";

const _KINDS: PolicyKind[] = ["private", "none", "egress"];

function _hex(n: number): string {
  return n.toString(16).padStart(2, "0");
}

/** The fleet's policy. */
export function fleetPolicy(n: number, generation = 0): NetPolicy {
  if (!Number.isInteger(generation) || generation < 0 || generation > 15) throw new RangeError("generation 0-15");
  const nics: NicPolicy[] = [];
  for (let i = 0; i < n; i++) {
    for (const k of [0, 1]) {
      nics.push({
        instance: `0b6c9c1e-3f7a-4d55-9d${_hex(0x47 + generation)}-${i.toString(16).padStart(12, "0")}`,
        index: k,
        bridge: k === 0 ? "br0" : "br1",
        policy: _KINDS[i % 3]!,
        sshFromHostOnly: i % 3 === 0,
        mac: `52:${_hex(0x54 + generation)}:0${k}:${_hex(i >> 16)}:${_hex((i >> 8) & 255)}:${_hex(i & 255)}`,
        addresses: [
          `10.${k * 16 + ((i >> 8) & 15)}.${i & 255}.${7 + generation}/24`,
          `fd${_hex(generation)}:${k}:${i.toString(16)}::7/64`,
        ],
      });
    }
  }
  return { nics };
}

/** The host's addresses on `br0` and `br1`. */
export const FLEET_HOST = ["10.0.0.1", "10.16.0.1", "fd00::1", "fe80::1"];
