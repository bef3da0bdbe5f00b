/**
 * The one name every runtime gives an instance's tap (`runtime.TapName` in the seed), so the nftables rules that
 * match taps by name exist before the tap does. Every instance tap starts with `bc`: the backstop tables match
 * `bc*`, and a bridge whose name starts with `bc` fails its instance.
 *
 * A Linux interface name holds at most 15 bytes, and instance ids are longer (UUIDs), so the name is `bc`, the first
 * 10 hex digits of the SHA-256 of the instance id, and the NIC's index in base 36: unique per NIC of one instance,
 * stable across passes, processes and hosts, and the same for every runtime.
 *
 * @example
 * ```ts
 * tapName("0b6c9c1e-3f7a-4d55-9d47-2a7a1c5e6f01", 0); // "bc" + 10 hex digits + "0"
 * ```
 *
 * @module
 */
import { sha256HexSync } from "../../util/sha256.ts";

/** The prefix every instance tap carries (the backstop tables match `bc*`). */
export const TAP_PREFIX = "bc";

/** Linux's interface name limit (IFNAMSIZ less the terminating NUL). */
export const IFNAME_MAX = 15;

/** NIC indexes a tap name can carry: three base-36 digits keep the name within {@link IFNAME_MAX}. */
export const MAX_NICS = 36 ** 3;

/**
 * The tap of NIC `i` of `instance`: `bc` + 10 hex digits of SHA-256(instance id) + `i` in base 36; at most 15 bytes.
 * Throws `RangeError` for an empty id or an index outside 0..{@link MAX_NICS}-1.
 */
export function tapName(instance: string, i: number): string {
  if (instance.length === 0) throw new RangeError("tapName: the instance id is empty");
  if (!Number.isInteger(i) || i < 0 || i >= MAX_NICS) {
    throw new RangeError(`tapName: NIC index ${i} is outside 0..${MAX_NICS - 1}`);
  }
  const h = sha256HexSync(instance).slice(0, 10);
  return `${TAP_PREFIX}${h}${i.toString(36)}`;
}
