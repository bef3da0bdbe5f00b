/**
 * The helper's argument checks for the disk ops (issue 19, `disk.wipe` on the ramdisk): the agent names a disk by its
 * stable id from the inventory, never by a path or a kernel name; root resolves and re-checks it when the op runs.
 *
 * | op                 | fields                                | rule                                                  |
 * | ------------------ | ------------------------------------- | ----------------------------------------------------- |
 * | `disk.wipe`        | `diskId`, `pattern`, `verify`, `only?` | a by-id name; `zero` or `random`; `sample` or `all`; a ladder rung |
 * | `disk.wipe_status` | `diskId`                              | a by-id name                                          |
 * | `disk.wipe_cancel` | `diskId`                              | a by-id name                                          |
 *
 * @module
 */
import { isDiskId } from "../disks/disk_id.ts";
import { DEVICE_METHODS, type WipeMethod } from "../disks/wipe_device.ts";
import { argObject as _object, refuseArg as _refuse } from "./arg_fields.ts";
import type { HelperArgs } from "./protocol.ts";

const _METHODS: readonly string[] = [...DEVICE_METHODS, "overwrite-zero", "overwrite-random"];

function _diskId(op: string, v: unknown): string {
  if (!isDiskId(v)) _refuse(op, "diskId", v, "is not a /dev/disk/by-id name (never a path or a kernel name)");
  return v;
}

/** The checkers of the disk ops, joined into the helper's argument table. */
export const DISK_ARG_CHECKS: {
  readonly "disk.wipe": (raw: unknown) => HelperArgs["disk.wipe"];
  readonly "disk.wipe_status": (raw: unknown) => HelperArgs["disk.wipe_status"];
  readonly "disk.wipe_cancel": (raw: unknown) => HelperArgs["disk.wipe_cancel"];
} = {
  "disk.wipe": (raw) => {
    const op = "disk.wipe";
    const a = _object(op, "args", raw, ["diskId", "pattern", "verify", "only"], ["diskId", "pattern", "verify"]);
    const diskId = _diskId(op, a.diskId);
    if (a.pattern !== "zero" && a.pattern !== "random") _refuse(op, "pattern", a.pattern, "is not zero or random");
    if (a.verify !== "sample" && a.verify !== "all") _refuse(op, "verify", a.verify, "is not sample or all");
    if (a.only !== undefined && (typeof a.only !== "string" || !_METHODS.includes(a.only))) {
      _refuse(op, "only", a.only, `is not a wipe method (${_METHODS.join(", ")})`);
    }
    return {
      diskId,
      pattern: a.pattern,
      verify: a.verify,
      ...(a.only !== undefined ? { only: a.only as WipeMethod } : {}),
    };
  },
  "disk.wipe_status": (raw) => ({
    diskId: _diskId("disk.wipe_status", _object("disk.wipe_status", "args", raw, ["diskId"]).diskId),
  }),
  "disk.wipe_cancel": (raw) => ({
    diskId: _diskId("disk.wipe_cancel", _object("disk.wipe_cancel", "args", raw, ["diskId"]).diskId),
  }),
};
