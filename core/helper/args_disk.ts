/**
 * The helper's argument checks for the disk ops (issue 19, `disk.wipe` on the ramdisk): the agent names a disk by its
 * stable id from the inventory, never by a path or a kernel name; root resolves and re-checks it when the op runs.
 *
 * | op                 | fields                                | rule                                                  |
 * | ------------------ | ------------------------------------- | ----------------------------------------------------- |
 * | `disk.wipe`        | `diskId`, `pattern`, `verify`, `only?` | a by-id name; `zero` or `random`; `sample` or `all`; a ladder rung |
 * | `disk.wipe_status` | `diskId`                              | a by-id name                                          |
 * | `disk.wipe_cancel` | `diskId`                              | a by-id name                                          |
 * | `disk.deploy`      | `diskId`, `url`, `sha256`, `format`, `growRoot?`, `configDrive?` | a by-id name; `https://`, at most 4096 characters, no whitespace or control characters; 64 hex digits; `raw` or `qcow2`; a boolean; `metaData` (at most 64 KiB), `userData` (base64 of at most 64 KiB), `networkConfig?` (at most 64 KiB) |
 *
 * @module
 */
import { isDiskId } from "../disks/disk_id.ts";
import { DEVICE_METHODS, type WipeMethod } from "../disks/wipe_device.ts";
import { argObject as _object, refuseArg as _refuse } from "./arg_fields.ts";
import type { HelperArgs } from "./protocol.ts";

const _METHODS: readonly string[] = [...DEVICE_METHODS, "overwrite-zero", "overwrite-random"];

/** Whitespace or a control character anywhere in `s`. */
function _unprintable(s: string): boolean {
  // deno-lint-ignore no-control-regex
  return /[\s\u0000-\u001f\u007f]/.test(s);
}

function _diskId(op: string, v: unknown): string {
  if (!isDiskId(v)) _refuse(op, "diskId", v, "is not a /dev/disk/by-id name (never a path or a kernel name)");
  return v;
}

/** Each config drive file's bound, in bytes (cloud-init's user data limit on OpenStack). */
export const MAX_CONFIG_DRIVE_FILE = 64 * 1024;

function _configDrive(op: string, raw: unknown): NonNullable<HelperArgs["disk.deploy"]["configDrive"]> {
  const c = _object(op, "configDrive", raw, ["metaData", "userData", "networkConfig"], ["metaData", "userData"]);
  const text = (field: string, v: unknown): string => {
    if (typeof v !== "string" || new TextEncoder().encode(v).length > MAX_CONFIG_DRIVE_FILE) {
      _refuse(op, `configDrive.${field}`, v, `is not a string of at most ${MAX_CONFIG_DRIVE_FILE} bytes`);
    }
    return v;
  };
  const metaData = text("metaData", c.metaData);
  const u = c.userData;
  if (
    typeof u !== "string" || u.length > Math.ceil(MAX_CONFIG_DRIVE_FILE / 3) * 4 ||
    !/^[A-Za-z0-9+/]*={0,2}$/.test(u) || u.length % 4 !== 0
  ) {
    _refuse(op, "configDrive.userData", u, `is not base64 of at most ${MAX_CONFIG_DRIVE_FILE} bytes`);
  }
  return {
    metaData,
    userData: u,
    ...(c.networkConfig !== undefined ? { networkConfig: text("networkConfig", c.networkConfig) } : {}),
  };
}

/** The checkers of the disk ops, joined into the helper's argument table. */
export const DISK_ARG_CHECKS: {
  readonly "disk.wipe": (raw: unknown) => HelperArgs["disk.wipe"];
  readonly "disk.wipe_status": (raw: unknown) => HelperArgs["disk.wipe_status"];
  readonly "disk.wipe_cancel": (raw: unknown) => HelperArgs["disk.wipe_cancel"];
  readonly "disk.deploy": (raw: unknown) => HelperArgs["disk.deploy"];
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
  "disk.deploy": (raw) => {
    const op = "disk.deploy";
    const a = _object(op, "args", raw, ["diskId", "url", "sha256", "format", "growRoot", "configDrive"], [
      "diskId",
      "url",
      "sha256",
      "format",
    ]);
    const diskId = _diskId(op, a.diskId);
    if (typeof a.url !== "string" || a.url.length > 4096 || !a.url.startsWith("https://") || _unprintable(a.url)) {
      _refuse(op, "url", a.url, "is not an https URL of at most 4096 characters");
    }
    if (typeof a.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(a.sha256)) {
      _refuse(op, "sha256", a.sha256, "is not a SHA-256 in lowercase hex");
    }
    if (a.format !== "raw" && a.format !== "qcow2") _refuse(op, "format", a.format, "is not raw or qcow2");
    if (a.growRoot !== undefined && typeof a.growRoot !== "boolean") {
      _refuse(op, "growRoot", a.growRoot, "is not a boolean");
    }
    return {
      diskId,
      url: a.url,
      sha256: a.sha256,
      format: a.format,
      ...(a.growRoot ? { growRoot: true } : {}),
      ...(a.configDrive !== undefined ? { configDrive: _configDrive(op, a.configDrive) } : {}),
    };
  },
};
