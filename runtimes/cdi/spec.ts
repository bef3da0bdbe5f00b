/**
 * The CDI spec of a hold, `/etc/cdi/bcd-<allocation id>.json` (CDI 0.6): kind `bcd.dev/gpu`; one device per atom,
 * named for the atom with `/` as `_`, its real id in the device annotation `bcd.dev/device-id` and the GPU's
 * `/dev/nvidia<minor>` as its device node; the hold's env as spec-level `containerEdits.env`; the spec annotations
 * `bcd.dev/binding: kubernetes` (Kubernetes holds) and `bcd.dev/cgroup-parent` (holds with a slice). Reading a spec
 * back gives the hold, or a named problem.
 *
 * @module
 */
import { cdiDeviceName, classOfAtom } from "../../core/converge/devices/classes.ts";
import {
  ANNOTATION_BINDING,
  ANNOTATION_CGROUP_PARENT,
  ANNOTATION_DEVICE_ID,
  CDI_KIND,
  type HoldRecord,
  type ObservedHold,
} from "../../core/converge/devices/hold.ts";
import { isValidCdiDeviceName, isValidCdiKind } from "./cdi_name.ts";

/** The CDI version bcd writes: device and spec annotations need 0.6.0. */
export const CDI_VERSION = "0.6.0";

/** The largest spec file bcd reads back. */
export const MAX_SPEC_BYTES = 1024 * 1024;

/** A spec in the CDI directory that is not a hold bcd can read. */
export class CdiSpecError extends Error {
  override name = "CdiSpecError";
}

/** A CDI spec as JSON (the subset bcd writes). */
export interface CdiSpec {
  cdiVersion: string;
  kind: string;
  annotations?: Record<string, string>;
  devices: {
    name: string;
    annotations: Record<string, string>;
    containerEdits: { deviceNodes?: { path: string }[] };
  }[];
  containerEdits: { env: string[] };
}

/** The spec of a hold. Throws `RangeError` for a device name the CDI grammar refuses. */
export function renderCdiSpec(r: HoldRecord): CdiSpec {
  const annotations: Record<string, string> = {};
  if (r.binding === "kubernetes") annotations[ANNOTATION_BINDING] = "kubernetes";
  if (r.cgroupParent) annotations[ANNOTATION_CGROUP_PARENT] = r.cgroupParent;
  const spec: CdiSpec = {
    cdiVersion: CDI_VERSION,
    kind: CDI_KIND,
    ...(Object.keys(annotations).length ? { annotations } : {}),
    devices: r.devices.map((d) => {
      if (!isValidCdiDeviceName(d.cdiName)) {
        throw new RangeError(`CDI device name ${JSON.stringify(d.cdiName)} is invalid`);
      }
      return {
        name: d.cdiName,
        annotations: { [ANNOTATION_DEVICE_ID]: d.atom },
        containerEdits: d.minorNumber === undefined ? {} : { deviceNodes: [{ path: `/dev/nvidia${d.minorNumber}` }] },
      };
    }),
    containerEdits: { env: [...r.env] },
  };
  return spec;
}

/** The spec file's text: JSON, two-space indented, newline-terminated. */
export function cdiSpecText(r: HoldRecord): string {
  return JSON.stringify(renderCdiSpec(r), null, 2) + "\n";
}

function _obj(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new CdiSpecError(`${what} is not an object`);
  return v as Record<string, unknown>;
}

function _strings(v: unknown, what: string): Record<string, string> {
  const o = _obj(v, what);
  for (const [k, x] of Object.entries(o)) {
    if (typeof x !== "string") throw new CdiSpecError(`${what}.${k} is not a string`);
  }
  return o as Record<string, string>;
}

/** Reads a hold back from its spec file's text. Throws {@link CdiSpecError} naming what is wrong. */
export function parseCdiSpec(allocationId: string, text: string): ObservedHold {
  if (text.length > MAX_SPEC_BYTES) throw new CdiSpecError(`spec exceeds ${MAX_SPEC_BYTES} bytes`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new CdiSpecError(`not JSON: ${(e as Error).message}`);
  }
  const s = _obj(raw, "spec");
  if (typeof s.cdiVersion !== "string") throw new CdiSpecError("cdiVersion is not a string");
  if (s.kind !== CDI_KIND || !isValidCdiKind(s.kind)) {
    throw new CdiSpecError(`kind ${JSON.stringify(s.kind)} is not ${CDI_KIND}`);
  }
  const ann = s.annotations === undefined ? {} : _strings(s.annotations, "annotations");
  const binding = ann[ANNOTATION_BINDING];
  if (binding !== undefined && binding !== "kubernetes") {
    throw new CdiSpecError(`binding annotation ${JSON.stringify(binding)}`);
  }
  if (!Array.isArray(s.devices) || s.devices.length === 0 || s.devices.length > 1024) {
    throw new CdiSpecError("devices is not a non-empty array");
  }
  const devices = s.devices.map((d, i) => {
    const dev = _obj(d, `devices[${i}]`);
    const atom = _strings(dev.annotations ?? {}, `devices[${i}].annotations`)[ANNOTATION_DEVICE_ID];
    if (atom === undefined) throw new CdiSpecError(`devices[${i}] has no ${ANNOTATION_DEVICE_ID} annotation`);
    const cls = classOfAtom(atom);
    if (!cls) throw new CdiSpecError(`devices[${i}] names ${JSON.stringify(atom)}, not an atom of a known class`);
    if (dev.name !== cdiDeviceName(atom)) throw new CdiSpecError(`devices[${i}] name does not match its atom ${atom}`);
    return { class: cls, atom, gpuUuid: atom.split("/")[0]! };
  });
  const edits = s.containerEdits === undefined ? {} : _obj(s.containerEdits, "containerEdits");
  const env = edits.env ?? [];
  if (!Array.isArray(env) || !env.every((e) => typeof e === "string")) throw new CdiSpecError("containerEdits.env");
  if (!env.includes(`BCD_ALLOCATION_ID=${allocationId}`)) {
    throw new CdiSpecError(`env does not carry BCD_ALLOCATION_ID=${allocationId}`);
  }
  const parent = ann[ANNOTATION_CGROUP_PARENT];
  return {
    allocationId,
    binding: binding === "kubernetes" ? "kubernetes" : "hold",
    devices,
    env: env as string[],
    ...(parent !== undefined ? { cgroupParent: parent } : {}),
  };
}

/** The env file's text: one `KEY=VALUE` line each. */
export function envFileText(env: readonly string[]): string {
  return env.map((l) => `${l}\n`).join("");
}
