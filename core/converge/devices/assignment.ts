/**
 * The devices section's input: one `DeviceAssignment` per hold, with the seed's field names. The lead maps the wire
 * message onto this type; nothing here knows protobuf.
 *
 * @module
 */

/** The wire's binding enum names. `BINDING_HOLD` and `BINDING_KUBERNETES` bind; any other fails `unsupported-binding`. */
export type BindingName = "BINDING_HOLD" | "BINDING_KUBERNETES" | (string & Record<never, never>);

/** One device of an assignment: a device class and an atom id. */
export interface AssignedDevice {
  /** `gpu`, `gpu.mig` or `gpu.slot`; any other class fails `unsupported-device`. */
  readonly class: string;
  /** The atom id: a GPU UUID, `<GPU UUID>/gi<N>/ci<M>` or `<GPU UUID>/s<N>`. */
  readonly id: string;
}

/** `DeviceAssignment.limits`: the host resources a reservation booked (000 §Device assignments, host resources). */
export interface AssignmentLimits {
  /** 1000 per CPU; becomes `CPUQuota` in whole percents. */
  readonly cpu_millis?: number;
  /** Becomes `MemoryMax`, and `MemoryHigh` at 90% of it. */
  readonly memory_bytes?: number;
  /** 1 GiB huge pages: `hugetlb.1GB.max`. */
  readonly hugepages_1gi?: number;
  /** 2 MiB huge pages: `hugetlb.2MB.max`. */
  readonly hugepages_2mi?: number;
  /** A cpulist (`0-15,32-47`): `AllowedCPUs`. */
  readonly cpus?: string;
  /** A NUMA node list: `AllowedMemoryNodes`. */
  readonly mems?: string;
}

/** One device assignment of the `devices` section. */
export interface DeviceAssignment {
  readonly allocation_id: string;
  readonly reservation_id: string;
  readonly binding: BindingName;
  readonly devices: readonly AssignedDevice[];
  /** Extra env lines (`KEY=VALUE`) every workload of the hold gets. */
  readonly env?: readonly string[];
  readonly limits?: AssignmentLimits;
}

/** The `devices` section. */
export interface DevicesSection {
  readonly assignments: readonly DeviceAssignment[];
}

/**
 * What a GPU host's `Hello` advertises (000 §Device assignments, capabilities), written by the gateway as
 * `bc.dev/cap.<capability>` labels, so capacity places holds with limits and Kubernetes holds only here.
 */
export const DEVICE_CAPABILITIES: readonly string[] = ["devices.limits", "binding.kubernetes"];

/** The two bindings bcd honours. */
export type HoldBinding = "hold" | "kubernetes";

/** The binding an assignment binds as, or `undefined` for one that fails `unsupported-binding`. */
export function holdBinding(name: BindingName): HoldBinding | undefined {
  if (name === "BINDING_HOLD") return "hold";
  if (name === "BINDING_KUBERNETES") return "kubernetes";
  return undefined;
}

const _ALLOCATION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * Whether an allocation id is safe to name files (`/etc/cdi/bcd-<id>.json`, `<id>.env`) and a slice with. Ids are
 * 1–128 characters of `[A-Za-z0-9_.-]`, starting alphanumeric.
 */
export function isValidAllocationId(id: string): boolean {
  return _ALLOCATION_ID.test(id) && !id.includes("..");
}

const _CPULIST = /^\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?)*$/;

/** Whether `s` is a kernel cpulist / node list such as `0-3,8,10-11`, with ranges ascending. */
export function isValidCpuList(s: string): boolean {
  if (!_CPULIST.test(s)) return false;
  return s.split(",").every((part) => {
    const [a, b] = part.split("-");
    return b === undefined || Number(a) <= Number(b);
  });
}

/** Expands a cpulist into its members. Throws `RangeError` on a malformed list. */
export function parseCpuList(s: string): number[] {
  if (!isValidCpuList(s)) throw new RangeError(`malformed cpulist ${JSON.stringify(s)}`);
  const out = new Set<number>();
  for (const part of s.split(",")) {
    const [a, b] = part.split("-");
    const lo = Number(a);
    const hi = b === undefined ? lo : Number(b);
    for (let i = lo; i <= hi; i++) out.add(i);
  }
  return [...out].sort((x, y) => x - y);
}

/** Whether the assignment booked anything that needs a slice (000: "a hold without limits gets no slice"). */
export function hasSliceLimits(limits: AssignmentLimits | undefined): boolean {
  if (!limits) return false;
  return (limits.cpu_millis ?? 0) > 0 || (limits.memory_bytes ?? 0) > 0 || (limits.hugepages_1gi ?? 0) > 0 ||
    (limits.hugepages_2mi ?? 0) > 0 || !!limits.cpus || !!limits.mems;
}
