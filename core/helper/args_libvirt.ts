/**
 * The default-deny argument table of the helper's `libvirt.*` ops (000 §The runtimes, "Under bcd helper"). The node
 * names a domain by instance id and describes a domain as a {@link DomainPlan}; it never sends a path or XML. The
 * helper renders the XML itself from the checked plan and its own data dir, so only bcd's devices and only files
 * under `<data dir>/libvirt/instances/<id>/` and `<data dir>/libvirt/images/` can appear in it.
 *
 * | op                                  | fields            | rule                                                  |
 * | ----------------------------------- | ----------------- | ----------------------------------------------------- |
 * | `libvirt.list`                      | none              |                                                       |
 * | `libvirt.define`                    | `plan`            | every field of {@link DomainPlan}, no other, `planProblem` passes |
 * | `libvirt.start`                     | `id`, `paused`    | instance id; boolean                                  |
 * | `libvirt.suspend`, `libvirt.resume`, `libvirt.shutdown`, `libvirt.destroy`, `libvirt.undefine` | `id` | instance id |
 * | `libvirt.blockresize`               | `id`, `bytes`, `volume`? | instance id; a positive safe integer; a volume id (root finds its device in the plan) |
 * | `libvirt.attach_disk`               | `id`, `disk`      | instance id; `{volume: {id, serial, readOnly}}` (the grammar of `core/volumes`) or `{rebind: true}` (the identity rebind disk) |
 * | `libvirt.detach_disk`               | `id`, `disk`      | instance id; `{volume: <volume id>}` or `{rebind: true}` |
 * | `libvirt.save`                      | `id`              | instance id (the state file is `instances/<id>/memory.save`, built by root) |
 * | `libvirt.restore`                   | `id`, `paused`    | instance id; boolean (the XML is root's rendering of the domain's plan) |
 * | `libvirt.setmem`                    | `id`, `kib`       | instance id; 1 to 2^40 KiB (root bounds it by the domain's memory) |
 * | `libvirt.domstats`                  | `id`              | instance id                                           |
 *
 * A plan's `volumes` (optional) are `{id, serial, readOnly, dev}`: the volume grammar, `vdb` to `vdy`, each once.
 * No field of any op is a path: root builds `<data dir>/volumes/<id>.raw` and `instances/<id>/rebind.raw` itself.
 *
 * @module
 */
import {
  type DomainPlan,
  type HotDisk,
  type HotDiskRef,
  INSTANCE_ID,
  planProblem,
  type PlanVolume,
} from "../converge/instances/domain_plan.ts";
import { VOLUME_ID, VOLUME_SERIAL } from "../volumes/grammar.ts";
import { isValidAllocationId } from "../converge/devices/assignment.ts";
import { argObject as _object, refuseArg as _refuse, showArg as _show } from "./arg_fields.ts";
import { LIBVIRT_OPS, type LibvirtOp } from "./ops_vm.ts";

export { LIBVIRT_OPS, type LibvirtOp };

/** A domain verb's arguments. */
export interface LibvirtIdArgs {
  readonly id: string;
}

/** Each libvirt op's arguments, checked. */
export interface LibvirtArgs {
  "libvirt.list": Record<never, never>;
  "libvirt.define": { readonly plan: DomainPlan };
  "libvirt.start": { readonly id: string; readonly paused: boolean };
  "libvirt.suspend": LibvirtIdArgs;
  "libvirt.resume": LibvirtIdArgs;
  "libvirt.shutdown": LibvirtIdArgs;
  "libvirt.destroy": LibvirtIdArgs;
  "libvirt.undefine": LibvirtIdArgs;
  "libvirt.blockresize": { readonly id: string; readonly bytes: number; readonly volume?: string };
  "libvirt.attach_disk": { readonly id: string; readonly disk: HotDisk };
  "libvirt.detach_disk": { readonly id: string; readonly disk: HotDiskRef };
  "libvirt.save": LibvirtIdArgs;
  "libvirt.restore": { readonly id: string; readonly paused: boolean };
  "libvirt.setmem": { readonly id: string; readonly kib: number };
  "libvirt.domstats": LibvirtIdArgs;
}

/** What a verb answers: done, or a refusal with its reason (the node fails that instance). */
export interface LibvirtOutcome {
  readonly refused?: { readonly reason: string; readonly message: string };
}

/** Each libvirt op's result. */
export interface LibvirtResults {
  "libvirt.list": {
    readonly domains: ReadonlyArray<{ name: string; state: string; plan: DomainPlan | null }>;
  };
  "libvirt.define": LibvirtOutcome;
  "libvirt.start": LibvirtOutcome;
  "libvirt.suspend": LibvirtOutcome;
  "libvirt.resume": LibvirtOutcome;
  "libvirt.shutdown": LibvirtOutcome;
  "libvirt.destroy": LibvirtOutcome;
  "libvirt.undefine": LibvirtOutcome;
  "libvirt.blockresize": LibvirtOutcome;
  "libvirt.attach_disk": LibvirtOutcome;
  "libvirt.detach_disk": LibvirtOutcome;
  "libvirt.save": LibvirtOutcome;
  "libvirt.restore": LibvirtOutcome;
  "libvirt.setmem": LibvirtOutcome;
  "libvirt.domstats": LibvirtOutcome & {
    readonly balloon?: {
      readonly currentKiB: number | null;
      readonly maximumKiB: number | null;
      readonly usedKiB: number | null;
    };
  };
}

/** The largest balloon target the checks let through, KiB (root bounds it again by the domain's memory). */
export const MAX_SETMEM_KIB = 2 ** 40;

function _id(op: string, v: unknown): string {
  if (typeof v !== "string" || !INSTANCE_ID.test(v)) _refuse(op, "id", v, "is not an instance id");
  return v;
}

function _string(op: string, path: string, v: unknown): string {
  if (typeof v !== "string") _refuse(op, path, v, "is not a string");
  return v;
}

function _list(op: string, path: string, v: unknown, max: number): unknown[] {
  if (!Array.isArray(v) || v.length > max) _refuse(op, path, v, `is not a list of at most ${max}`);
  return v;
}

function _volumeId(op: string, path: string, v: unknown): string {
  if (typeof v !== "string" || !VOLUME_ID.test(v)) _refuse(op, path, v, "is not a volume id");
  return v;
}

/** A plan's volumes, field by field. */
function _volumes(op: string, raw: unknown): PlanVolume[] {
  return _list(op, "plan.volumes", raw, 24).map((x, i) => {
    const o = _object(op, `plan.volumes[${i}]`, x, ["id", "serial", "readOnly", "dev"]);
    if (typeof o.readOnly !== "boolean") _refuse(op, `plan.volumes[${i}].readOnly`, o.readOnly, "is not a boolean");
    return {
      id: _string(op, `plan.volumes[${i}].id`, o.id),
      serial: _string(op, `plan.volumes[${i}].serial`, o.serial),
      readOnly: o.readOnly,
      dev: _string(op, `plan.volumes[${i}].dev`, o.dev),
    };
  });
}

/** `disk`: `{volume}` or `{rebind: true}`, exactly one: what a hot-plug op names. */
function _hot(op: string, raw: unknown, attach: boolean): { id: string; disk: HotDisk | HotDiskRef } {
  const o = _object(op, "args", raw, ["id", "disk"]);
  const id = _id(op, o.id);
  const a = _object(op, "disk", o.disk, ["volume", "rebind"], []);
  if ((a.volume === undefined) === (a.rebind === undefined)) {
    _refuse(op, "disk", Object.keys(a), "must name exactly one of volume and rebind");
  }
  if (a.rebind !== undefined) {
    if (a.rebind !== true) _refuse(op, "disk.rebind", a.rebind, "is not true");
    return { id, disk: { rebind: true } };
  }
  if (!attach) return { id, disk: { volume: _volumeId(op, "disk.volume", a.volume) } };
  const v = _object(op, "disk.volume", a.volume, ["id", "serial", "readOnly"]);
  if (typeof v.serial !== "string" || !VOLUME_SERIAL.test(v.serial)) {
    _refuse(op, "disk.volume.serial", v.serial, "is not a volume serial");
  }
  if (typeof v.readOnly !== "boolean") _refuse(op, "disk.volume.readOnly", v.readOnly, "is not a boolean");
  const vid = _volumeId(op, "disk.volume.id", v.id);
  return { id, disk: { volume: { id: vid, serial: v.serial, readOnly: v.readOnly } } };
}

/** A plan, field by field: only {@link DomainPlan}'s fields, each of its type, then its rules. */
function _plan(raw: unknown): DomainPlan {
  const op = "libvirt.define";
  const p = _object(op, "plan", raw, [
    "id",
    "allocationId",
    "vcpus",
    "memoryMiB",
    "image",
    "nics",
    "gpus",
    "placement",
    "seed",
    "restoredFrom",
    "volumes",
  ], [
    "id",
    "allocationId",
    "vcpus",
    "memoryMiB",
    "image",
    "nics",
    "gpus",
    "placement",
    "seed",
    "restoredFrom",
  ]);
  let image: DomainPlan["image"] = null;
  if (p.image !== null) {
    const i = _object(op, "plan.image", p.image, ["sha256", "format"]);
    image = {
      sha256: _string(op, "plan.image.sha256", i.sha256),
      format: _string(op, "plan.image.format", i.format) as "qcow2",
    };
  }
  const nics = _list(op, "plan.nics", p.nics, 16).map((n, i) => {
    const o = _object(op, `plan.nics[${i}]`, n, ["mac", "bridge"]);
    return { mac: _string(op, `plan.nics[${i}].mac`, o.mac), bridge: _string(op, `plan.nics[${i}].bridge`, o.bridge) };
  });
  const gpus = _list(op, "plan.gpus", p.gpus, 16).map((g, i) => {
    const o = _object(op, `plan.gpus[${i}]`, g, ["uuid", "pciBusId"]);
    return {
      uuid: _string(op, `plan.gpus[${i}].uuid`, o.uuid),
      pciBusId: _string(op, `plan.gpus[${i}].pciBusId`, o.pciBusId),
    };
  });
  let placement: DomainPlan["placement"] = null;
  if (p.placement !== null) {
    const o = _object(op, "plan.placement", p.placement, ["cpus", "mems", "hugepages", "balloon"]);
    if (typeof o.balloon !== "boolean") _refuse(op, "plan.placement.balloon", o.balloon, "is not a boolean");
    placement = {
      cpus: _string(op, "plan.placement.cpus", o.cpus),
      mems: _string(op, "plan.placement.mems", o.mems),
      hugepages: _string(op, "plan.placement.hugepages", o.hugepages) as "none",
      balloon: o.balloon,
    };
  }
  if (typeof p.seed !== "boolean") _refuse(op, "plan.seed", p.seed, "is not a boolean");
  if (typeof p.vcpus !== "number") _refuse(op, "plan.vcpus", p.vcpus, "is not a number");
  if (typeof p.memoryMiB !== "number") _refuse(op, "plan.memoryMiB", p.memoryMiB, "is not a number");
  const plan: DomainPlan = {
    id: _id(op, p.id),
    allocationId: _string(op, "plan.allocationId", p.allocationId),
    vcpus: p.vcpus,
    memoryMiB: p.memoryMiB,
    image,
    nics,
    gpus,
    placement,
    seed: p.seed,
    restoredFrom: p.restoredFrom === null ? null : _string(op, "plan.restoredFrom", p.restoredFrom),
    ...(p.volumes === undefined ? {} : { volumes: _volumes(op, p.volumes) }),
  };
  if (!isValidAllocationId(plan.allocationId)) {
    _refuse(op, "plan.allocationId", plan.allocationId, "is not an allocation id");
  }
  const bad = planProblem(plan);
  if (bad) _refuse(op, `plan.${bad[0]}`, bad[1], bad[2]);
  return plan;
}

/** The checkers, one per libvirt op. */
export const LIBVIRT_CHECKS: { readonly [O in LibvirtOp]: (raw: unknown) => LibvirtArgs[O] } = {
  "libvirt.list": (raw) => (_object("libvirt.list", "args", raw, []), {}),
  "libvirt.define": (raw) => ({ plan: _plan(_object("libvirt.define", "args", raw, ["plan"]).plan) }),
  "libvirt.start": (raw) => {
    const a = _object("libvirt.start", "args", raw, ["id", "paused"]);
    if (typeof a.paused !== "boolean") _refuse("libvirt.start", "paused", a.paused, "is not a boolean");
    return { id: _id("libvirt.start", a.id), paused: a.paused };
  },
  "libvirt.suspend": (raw) => ({ id: _id("libvirt.suspend", _object("libvirt.suspend", "args", raw, ["id"]).id) }),
  "libvirt.resume": (raw) => ({ id: _id("libvirt.resume", _object("libvirt.resume", "args", raw, ["id"]).id) }),
  "libvirt.shutdown": (raw) => ({ id: _id("libvirt.shutdown", _object("libvirt.shutdown", "args", raw, ["id"]).id) }),
  "libvirt.destroy": (raw) => ({ id: _id("libvirt.destroy", _object("libvirt.destroy", "args", raw, ["id"]).id) }),
  "libvirt.undefine": (raw) => ({ id: _id("libvirt.undefine", _object("libvirt.undefine", "args", raw, ["id"]).id) }),
  "libvirt.blockresize": (raw) => {
    const a = _object("libvirt.blockresize", "args", raw, ["id", "bytes", "volume"], ["id", "bytes"]);
    if (typeof a.bytes !== "number" || !Number.isSafeInteger(a.bytes) || a.bytes < 1) {
      _refuse("libvirt.blockresize", "bytes", a.bytes, "is not a positive byte count");
    }
    const volume = a.volume === undefined ? {} : { volume: _volumeId("libvirt.blockresize", "volume", a.volume) };
    return { id: _id("libvirt.blockresize", a.id), bytes: a.bytes, ...volume };
  },
  "libvirt.attach_disk": (raw) => _hot("libvirt.attach_disk", raw, true) as LibvirtArgs["libvirt.attach_disk"],
  "libvirt.detach_disk": (raw) => _hot("libvirt.detach_disk", raw, false) as LibvirtArgs["libvirt.detach_disk"],
  "libvirt.save": (raw) => ({ id: _id("libvirt.save", _object("libvirt.save", "args", raw, ["id"]).id) }),
  "libvirt.restore": (raw) => {
    const a = _object("libvirt.restore", "args", raw, ["id", "paused"]);
    if (typeof a.paused !== "boolean") _refuse("libvirt.restore", "paused", a.paused, "is not a boolean");
    return { id: _id("libvirt.restore", a.id), paused: a.paused };
  },
  "libvirt.setmem": (raw) => {
    const a = _object("libvirt.setmem", "args", raw, ["id", "kib"]);
    if (typeof a.kib !== "number" || !Number.isSafeInteger(a.kib) || a.kib < 1 || a.kib > MAX_SETMEM_KIB) {
      _refuse("libvirt.setmem", "kib", a.kib, `is not 1 to ${MAX_SETMEM_KIB} KiB`);
    }
    return { id: _id("libvirt.setmem", a.id), kib: a.kib };
  },
  "libvirt.domstats": (raw) => ({ id: _id("libvirt.domstats", _object("libvirt.domstats", "args", raw, ["id"]).id) }),
};
