/**
 * A hold as bcd writes it (a CDI spec and an env file) and as it reads it back from the CDI directory.
 *
 * @module
 */
import type { HoldBinding } from "./assignment.ts";
import type { DeviceClass, ResolvedDevice } from "./classes.ts";

/** The CDI kind of every hold's devices: CDI names read `bcd.dev/gpu=<name>`. */
export const CDI_KIND = "bcd.dev/gpu";
/** Device annotation carrying the real atom id (CDI names cannot contain `/`). */
export const ANNOTATION_DEVICE_ID = "bcd.dev/device-id";
/** Spec annotation `bcd.dev/binding: kubernetes` on Kubernetes holds. */
export const ANNOTATION_BINDING = "bcd.dev/binding";
/** Spec annotation naming the hold's slice. */
export const ANNOTATION_CGROUP_PARENT = "bcd.dev/cgroup-parent";

/** A device of a hold as written. */
export type HoldDevice = Pick<ResolvedDevice, "class" | "atom" | "gpuUuid" | "cdiName" | "minorNumber">;

/** What bcd writes for a hold: the CDI spec `/etc/cdi/bcd-<allocation id>.json` and the env file. */
export interface HoldRecord {
  readonly allocationId: string;
  readonly binding: HoldBinding;
  readonly devices: readonly HoldDevice[];
  /** Spec-level env, also the env file's lines. */
  readonly env: readonly string[];
  /** The slice name, for holds that have one. */
  readonly cgroupParent?: string;
}

/** A hold read back from the CDI directory. */
export interface ObservedHold {
  readonly allocationId: string;
  readonly binding: HoldBinding;
  readonly devices: readonly { readonly class: DeviceClass; readonly atom: string; readonly gpuUuid: string }[];
  readonly env: readonly string[];
  readonly cgroupParent?: string;
}

/** A `bcd-*.json` in the CDI directory that could not be read as a hold. */
export interface UnreadableHold {
  readonly allocationId: string;
  readonly path: string;
  readonly problem: string;
}

/** The CDI name `AllocationBound` and `AllocationReleased` report: `bcd.dev/gpu=<CDI device name>`. */
export function qualifiedCdiName(cdiName: string): string {
  return `${CDI_KIND}=${cdiName}`;
}

/** The CDI names of a hold's atoms. */
export function holdCdiNames(devices: readonly { readonly atom: string }[]): string[] {
  return devices.map((d) => qualifiedCdiName(d.atom.replaceAll("/", "_")));
}

/** Whether a hold read back is what `record` would write (binding, atoms in order, env, slice). */
export function sameHold(o: ObservedHold, r: HoldRecord): boolean {
  return o.binding === r.binding &&
    o.cgroupParent === r.cgroupParent &&
    o.devices.length === r.devices.length &&
    o.devices.every((d, i) => d.atom === r.devices[i]!.atom) &&
    o.env.length === r.env.length &&
    o.env.every((e, i) => e === r.env[i]);
}
