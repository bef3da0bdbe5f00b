/**
 * From the wire's `bcd.v1.DevicesSection` (decoded by protobufjs: enums as numbers, uint64 as numbers, absent
 * fields as defaults) to the converger's {@link DevicesSection}. A binding number the wire enum does not name keeps
 * its number as its name, so it fails `unsupported-binding`; a uint64 past 2^53 is refused.
 *
 * @module
 */
import { bcd } from "../../../proto/mod.ts";
import type { AssignmentLimits, DeviceAssignment, DevicesSection } from "./assignment.ts";

/** A uint64 field as protobufjs may give it. */
type U64 = number | bigint | string | { toNumber(): number } | null | undefined;

function _u64(v: U64, what: string): number | undefined {
  if (v === null || v === undefined) return undefined;
  const n = typeof v === "object" ? v.toNumber() : Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${what} ${String(v)} is not a safe unsigned integer`);
  return n === 0 ? undefined : n;
}

function _binding(v: unknown): string {
  if (typeof v === "string") return v;
  const n = typeof v === "number" ? v : 0;
  // Read here, not when the module loads: reading `DeviceAssignment` defines its class (issue 24).
  const bindings = bcd.v1.DeviceAssignment.Binding as unknown as Record<string, number>;
  return Object.keys(bindings).find((k) => bindings[k] === n) ?? `BINDING_${n}`;
}

interface _WireLimits {
  cpu_millis?: U64;
  memory_bytes?: U64;
  hugepages_1gi?: U64;
  hugepages_2mi?: U64;
  cpus?: string | null;
  mems?: string | null;
}

interface _WireAssignment {
  allocation_id?: string | null;
  reservation_id?: string | null;
  binding?: number | string | null;
  devices?: readonly ({ class?: string | null; id?: string | null } | null)[] | null;
  env?: readonly (string | null)[] | null;
  limits?: _WireLimits | null;
}

function _limits(l: _WireLimits | null | undefined, id: string): AssignmentLimits | undefined {
  if (!l) return undefined;
  const out: { -readonly [K in keyof AssignmentLimits]: AssignmentLimits[K] } = {};
  for (const k of ["cpu_millis", "memory_bytes", "hugepages_1gi", "hugepages_2mi"] as const) {
    const v = _u64(l[k], `${id}: limits.${k}`);
    if (v !== undefined) out[k] = v;
  }
  if (l.cpus) out.cpus = l.cpus;
  if (l.mems) out.mems = l.mems;
  return Object.keys(out).length ? out : undefined;
}

/** A `DevicesSection` as protobufjs decodes it, as its JSON form, or as {@link DevicesSection} itself. */
export interface WireDevicesSection {
  readonly assignments?: readonly (_WireAssignment | null)[] | null;
}

/**
 * The converger's view of a decoded `DevicesSection` (or its JSON form; a {@link DevicesSection} maps to itself).
 * Throws `RangeError` on a uint64 past 2^53.
 */
export function devicesSectionFromWire(section: WireDevicesSection | null | undefined): DevicesSection {
  return {
    assignments: (section?.assignments ?? []).filter((a): a is _WireAssignment => !!a).map((a): DeviceAssignment => {
      const id = a.allocation_id ?? "";
      const limits = _limits(a.limits, id);
      return {
        allocation_id: id,
        reservation_id: a.reservation_id ?? "",
        binding: _binding(a.binding),
        devices: (a.devices ?? []).filter((d) => !!d).map((d) => ({ class: d!.class ?? "", id: d!.id ?? "" })),
        env: (a.env ?? []).filter((e): e is string => typeof e === "string"),
        ...(limits ? { limits } : {}),
      };
    }),
  };
}
