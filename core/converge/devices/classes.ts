/**
 * The device classes table of 000 §Device assignments: what each class's atom id looks like, what it resolves to in
 * the inventory, and when it is held.
 *
 * | Device class | Atom id                   | Resolves to                      | Held when                         |
 * | ------------ | ------------------------- | -------------------------------- | --------------------------------- |
 * | `gpu`        | the GPU's UUID            | itself                           | the inventory has it              |
 * | `gpu.mig`    | `<GPU UUID>/gi<N>/ci<M>`  | the MIG instance's `MIG-…` UUID  | the instance exists (else `device-missing`) |
 * | `gpu.slot`   | `<GPU UUID>/s<N>`         | its GPU                          | the GPU exists                    |
 *
 * @module
 */
import type { AssignedDevice } from "./assignment.ts";
import { findGpu, type GpuInventory } from "./inventory.ts";
import { AllocationRefused } from "./reasons.ts";

/** The classes bcd holds. */
export type DeviceClass = "gpu" | "gpu.mig" | "gpu.slot";

/** Every class, in the seed's order. */
export const DEVICE_CLASSES: readonly DeviceClass[] = ["gpu", "gpu.mig", "gpu.slot"];

const _UUID = "GPU-[A-Za-z0-9-]{1,64}";
const _ATOM: Readonly<Record<DeviceClass, RegExp>> = {
  "gpu": new RegExp(`^(${_UUID})$`),
  "gpu.mig": new RegExp(`^(${_UUID})/gi(\\d{1,4})/ci(\\d{1,4})$`),
  "gpu.slot": new RegExp(`^(${_UUID})/s(\\d{1,4})$`),
};

/** An atom id taken apart. */
export interface ParsedAtom {
  readonly class: DeviceClass;
  readonly atom: string;
  readonly gpuUuid: string;
  readonly gi?: number;
  readonly ci?: number;
  readonly slot?: number;
}

/** Whether `c` is a class bcd holds. */
export function isDeviceClass(c: string): c is DeviceClass {
  return (DEVICE_CLASSES as readonly string[]).includes(c);
}

/** The class an atom id has by its shape, or `undefined` for a malformed one (used to read holds back). */
export function classOfAtom(atom: string): DeviceClass | undefined {
  return DEVICE_CLASSES.find((c) => _ATOM[c].test(atom));
}

/**
 * Takes an assigned device's atom apart. An unknown class fails `unsupported-device`; an atom that is not of its
 * class's shape names nothing the inventory could have, so it fails `device-missing`.
 */
export function parseAtom(dev: AssignedDevice): ParsedAtom {
  if (!isDeviceClass(dev.class)) {
    throw new AllocationRefused("unsupported-device", `device class ${JSON.stringify(dev.class)} is not supported`);
  }
  const m = _ATOM[dev.class].exec(dev.id);
  if (!m) {
    throw new AllocationRefused(
      "device-missing",
      `${dev.class} id ${JSON.stringify(dev.id)} is not of the form ${_shape(dev.class)}`,
    );
  }
  const gpuUuid = m[1]!;
  switch (dev.class) {
    case "gpu":
      return { class: "gpu", atom: dev.id, gpuUuid };
    case "gpu.mig":
      return { class: "gpu.mig", atom: dev.id, gpuUuid, gi: Number(m[2]), ci: Number(m[3]) };
    case "gpu.slot":
      return { class: "gpu.slot", atom: dev.id, gpuUuid, slot: Number(m[2]) };
  }
}

function _shape(c: DeviceClass): string {
  return c === "gpu" ? "<GPU UUID>" : c === "gpu.mig" ? "<GPU UUID>/gi<N>/ci<M>" : "<GPU UUID>/s<N>";
}

/** The CDI device name of an atom: CDI names cannot contain `/`, so `/` becomes `_`. */
export function cdiDeviceName(atom: string): string {
  return atom.replaceAll("/", "_");
}

/** A device resolved against the inventory. */
export interface ResolvedDevice extends ParsedAtom {
  /** What the driver knows, for `NVIDIA_VISIBLE_DEVICES`: the GPU UUID, or the MIG instance's `MIG-…` UUID. */
  readonly visibleId: string;
  readonly cdiName: string;
  /** The GPU's `/dev/nvidia<minor>`, when the inventory knows it. */
  readonly minorNumber?: number;
  readonly numaNode?: number;
}

/** Resolves an assigned device against the inventory; fails `unsupported-device` or `device-missing`. */
export function resolveDevice(dev: AssignedDevice, inv: GpuInventory): ResolvedDevice {
  const p = parseAtom(dev);
  const gpu = findGpu(inv, p.gpuUuid);
  if (!gpu) throw new AllocationRefused("device-missing", `GPU ${p.gpuUuid} is not in the inventory`);
  const base = { ...p, cdiName: cdiDeviceName(p.atom), minorNumber: gpu.minorNumber, numaNode: gpu.numaNode };
  if (p.class !== "gpu.mig") return { ...base, visibleId: gpu.uuid };
  const mig = gpu.migInstances.find((i) => i.gi === p.gi && i.ci === p.ci);
  if (!mig) {
    throw new AllocationRefused(
      "device-missing",
      `MIG instance gi${p.gi}/ci${p.ci} does not exist on ${gpu.uuid} (yet: the mig-layout unit makes it)`,
    );
  }
  if (!mig.uuid) {
    throw new AllocationRefused("device-missing", `MIG instance ${p.atom} has no MIG UUID in the inventory`);
  }
  return { ...base, visibleId: mig.uuid };
}
