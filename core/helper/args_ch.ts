/**
 * The default-deny argument table of the helper's `ch.*` ops (000 §The runtimes, "cloud-hypervisor under bcd
 * helper"). The node names an instance by id, and a NIC by its index in the instance's record; it never sends a
 * path, a command line, a tap name or a bridge. Root reads `instances/<id>/vm.json` strictly itself and builds the
 * taps, the unit and the API requests from it.
 *
 * | op          | fields           | rule                                                               |
 * | ----------- | ---------------- | ------------------------------------------------------------------ |
 * | `ch.taps`, `ch.untaps`, `ch.launch`, `ch.stop`, `ch.state`, `ch.vfio`, `ch.unvfio` | `id` | instance id (root takes the GPUs from the record) |
 * | `ch.add_net` | `id`, `index`   | instance id; 0 to 15 (root finds the NIC in the record)            |
 * | `ch.restore` | `id`, `resume`  | instance id; boolean (the source is `instances/<id>/ch`, root's)   |
 * | `ch.memory` | `id`            | instance id (root reads the unit's cgroup `memory.stat`; the node reads no `/sys`) |
 *
 * @module
 */
import { INSTANCE_ID, MAX_NICS_PER_PLAN } from "../converge/instances/domain_plan.ts";
import type { UnitState } from "../converge/instances/ch_port.ts";
import { argObject as _object, refuseArg as _refuse } from "./arg_fields.ts";
import { CH_OPS, type ChOp } from "./ops_vm.ts";

export { CH_OPS, type ChOp };

/** An instance verb's arguments. */
export interface ChIdArgs {
  readonly id: string;
}

/** Each ch op's arguments, checked. */
export interface ChArgs {
  "ch.taps": ChIdArgs;
  "ch.untaps": ChIdArgs;
  "ch.launch": ChIdArgs;
  "ch.add_net": { readonly id: string; readonly index: number };
  "ch.restore": { readonly id: string; readonly resume: boolean };
  "ch.stop": ChIdArgs;
  "ch.state": ChIdArgs;
  "ch.vfio": ChIdArgs;
  "ch.unvfio": ChIdArgs;
  "ch.memory": ChIdArgs;
}

/** What a verb answers: done, or a refusal with its reason (the node fails that instance). */
export interface ChOutcome {
  readonly refused?: { readonly reason: string; readonly message: string };
}

/** Each ch op's result. */
export interface ChResults {
  "ch.taps": ChOutcome;
  "ch.untaps": ChOutcome;
  "ch.launch": ChOutcome;
  "ch.add_net": ChOutcome;
  "ch.restore": ChOutcome;
  "ch.stop": ChOutcome & { readonly state?: UnitState };
  "ch.state": { readonly state: UnitState };
  "ch.vfio": ChOutcome;
  "ch.unvfio": ChOutcome;
  /** The VMM's anonymous memory, bytes (the balloon loop's usage reading); `null` without a reading. */
  "ch.memory": { readonly usedBytes: number | null };
}

function _id(op: string, v: unknown): string {
  if (typeof v !== "string" || !INSTANCE_ID.test(v)) _refuse(op, "id", v, "is not an instance id");
  return v;
}

function _idOnly<O extends ChOp>(op: O) {
  return (raw: unknown): ChIdArgs => ({ id: _id(op, _object(op, "args", raw, ["id"]).id) });
}

/** The checkers, one per ch op. */
export const CH_CHECKS: { readonly [O in ChOp]: (raw: unknown) => ChArgs[O] } = {
  "ch.taps": _idOnly("ch.taps"),
  "ch.untaps": _idOnly("ch.untaps"),
  "ch.launch": _idOnly("ch.launch"),
  "ch.add_net": (raw) => {
    const a = _object("ch.add_net", "args", raw, ["id", "index"]);
    if (typeof a.index !== "number" || !Number.isSafeInteger(a.index) || a.index < 0 || a.index >= MAX_NICS_PER_PLAN) {
      _refuse("ch.add_net", "index", a.index, `is not a NIC index 0 to ${MAX_NICS_PER_PLAN - 1}`);
    }
    return { id: _id("ch.add_net", a.id), index: a.index };
  },
  "ch.restore": (raw) => {
    const a = _object("ch.restore", "args", raw, ["id", "resume"]);
    if (typeof a.resume !== "boolean") _refuse("ch.restore", "resume", a.resume, "is not a boolean");
    return { id: _id("ch.restore", a.id), resume: a.resume };
  },
  "ch.stop": _idOnly("ch.stop"),
  "ch.state": _idOnly("ch.state"),
  "ch.vfio": _idOnly("ch.vfio"),
  "ch.unvfio": _idOnly("ch.unvfio"),
  "ch.memory": _idOnly("ch.memory"),
};
