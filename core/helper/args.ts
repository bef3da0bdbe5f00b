/**
 * The helper's default-deny argument table: every operation checks its own arguments before anything runs, and the
 * node never sends a path. An unknown field is refused by name (`unknown-field`); a value outside its rule is refused
 * with the field and the value (`invalid-argument`).
 *
 * | op               | fields                                | rule                                                   |
 * | ---------------- | ------------------------------------- | ------------------------------------------------------ |
 * | `host.boot_id`, `host.inventory`, `host.memory`, `host.memory_pressure`, `host.doctor`, `holds.list`, `slice.list` | none |      |
 * | `pci.numa_node`  | `pciBusId`                            | `DDDD[DDDD]:BB:DD.F`, hex                              |
 * | `file.write`     | `kind`, `allocationId`, …             | `cdi`: `binding`, `devices`, `env`, `cgroupParent?`; `allocation-env`: `env` |
 * | `file.remove`    | `kind`, `allocationId`                | kind `cdi` or `allocation-env`                         |
 * | `slice.apply`    | `name`, `settings`                    | `bcd-alloc-<allocation id>.slice`; cpulists and counts |
 * | `slice.remove`, `slice.usage` | `name`                   | `bcd-alloc-<allocation id>.slice`                      |
 * | `gpu.reset`      | `gpuUuid`                             | `GPU-…` (a whole GPU's UUID, not a MIG device's)       |
 * | `dcgm.diag`      | `level`, `gpuUuids`                   | 1 to 4; at most 64 whole-GPU UUIDs (empty: every GPU)  |
 * | `node.reboot`    | `reason`                              | at most 512 characters, no control characters          |
 * | `nft.apply`, `nft.list` | `policy`; none                 | the network policy's own table (`args_nft.ts`)         |
 * | `sysctl.*`, `hugepages.*` | `keys`, `steps`; none, `steps` | allowlisted sysctl keys, huge page sizes (`args_host.ts`) |
 * | `modules.read`, `modules.apply` | none; `steps`           | module names and options by modprobe's grammar (`args_host.ts`) |
 * | `mig.read`, `mig.apply` | none; `steps`                    | GPU UUIDs, MIG profiles, instance ids (`args_host.ts`) |
 * | `sharing.read`, `sharing.apply` | none; `steps`           | GPU UUIDs, a thread percentage (`args_host.ts`)        |
 * | `package.read`, `package.apply` | `unit`, `package`, `steps` | a package unit, its own kind of package, a Debian version (`args_host.ts`) |
 * | `plugin.list`, `plugin.manifest`, `plugin.attach` | none; `name`; `name` | a plugin name `[a-z0-9][a-z0-9._-]{0,62}` (the directory's; the helper builds the path) |
 * | `kube.read`, `kube.join`, `kube.reset` | none; the join's settings and token; none | an endpoint, CA key pins, a node name, labels, taints, a bootstrap token never shown (`args_host.ts`) |
 * | `libvirt.*`      | see `args_libvirt.ts`                 | instance ids and a domain plan; never a path or XML    |
 * | `ch.*`           | see `args_ch.ts`                      | instance ids and NIC indexes; never a path or a command line |
 * | `access.observe`, `access.apply` | see `args_access.ts`  | sshd's access files as content, never a path           |
 * | `daemon.status`  | none                                  |                                                        |
 * | `daemon.install` | `version`, `sha256`, `signature`      | a release version (1-64 of `[0-9A-Za-z._+-]`, no `..`), 64 lowercase hex, base64 of at most 64 bytes |
 * | `daemon.confirm` | `version`                             | a release version                                      |
 * | `disk.wipe`, `disk.wipe_status`, `disk.wipe_cancel` | see `args_disk.ts` | a disk's by-id name, never a path; pattern, verify, a ladder rung |
 *
 * Allocation ids are the devices section's (1–128 of `[A-Za-z0-9_.-]`, starting alphanumeric, no `..`). A CDI write
 * is a hold, not a file: devices of a known class whose atom has that class's shape, `gpuUuid` the atom's GPU,
 * `cdiName` the atom with `/` as `_`, a minor number below 2^20; a cgroup parent only of a `hold` binding and only its
 * own slice. Env lines (of both kinds of write) are checked again here, the boundary, by the seed's rules as
 * `core/converge/devices/env.ts` states them (`holdEnvProblem`): well-formed lines whose values every env reader
 * reads alike, no `LD_*` key, no key twice, `BCD_ALLOCATION_ID=<allocation id>`, and each other key bcd reserves
 * exactly what bcd sets: `BCD_CGROUP_PARENT` only the hold's own slice, `CUDA_MPS_PIPE_DIRECTORY` only
 * `/run/nvidia-mps`, `NVIDIA_VISIBLE_DEVICES` only GPU or MIG UUIDs (for a CDI write: the hold's own devices, present
 * exactly for a `hold` binding).
 *
 * @module
 */
import { isValidAllocationId } from "../converge/devices/assignment.ts";
import { cdiDeviceName, classOfAtom, DEVICE_CLASSES, type DeviceClass } from "../converge/devices/classes.ts";
import { type HoldEnvContext, holdEnvProblem } from "../converge/devices/env.ts";
import { allocationIdOfSlice, checkSliceRequest, sliceName, type SliceSettings } from "../converge/devices/slice.ts";
import { HOST_ARG_CHECKS } from "./args_host.ts";
import { isPluginName } from "../plugins/protocol.ts";
import { NFT_ARG_CHECKS } from "./args_nft.ts";
import { LIBVIRT_CHECKS } from "./args_libvirt.ts";
import { CH_CHECKS } from "./args_ch.ts";
import { checkAccessApply, checkAccessObserve } from "./args_access.ts";
import { DISK_ARG_CHECKS } from "./args_disk.ts";
import { KEXEC_ARG_CHECKS } from "./args_kexec.ts";
import { argObject as _object, refuseArg as _refuse, showArg as _show } from "./arg_fields.ts";
import { HelperError } from "./errors.ts";
import { RELEASE_VERSION_RE } from "../daemon/release.ts";
import {
  type CdiWriteArgs,
  type EnvWriteArgs,
  FILE_KINDS,
  type FileKind,
  type HelperArgs,
  type HelperOp,
  type WireHoldDevice,
} from "./protocol.ts";

/** The most devices a CDI write names (the CDI read-back's bound). */
export const MAX_WRITE_DEVICES = 1024;
/** The most env lines a hold carries. */
export const MAX_ENV_LINES = 256;
/** The most bytes of env lines one hold carries (its env file; the env of its CDI spec). */
export const MAX_ENV_BYTES = 32 * 1024;
/** The longest reboot reason. */
export const MAX_REASON = 512;
/** The largest minor number a device node may name (the kernel's 20-bit minor). */
export const MAX_MINOR = 2 ** 20 - 1;

const _PCI = /^[0-9A-Fa-f]{4}(?:[0-9A-Fa-f]{4})?:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/;
const _SETTINGS = [
  "allowedCpus",
  "allowedMemoryNodes",
  "cpuQuotaPercent",
  "memoryMaxBytes",
  "memoryHighBytes",
  "hugetlb2MBMaxBytes",
  "hugetlb1GBMaxBytes",
];

function _allocationId(op: HelperOp, v: unknown): string {
  if (typeof v !== "string" || !isValidAllocationId(v)) _refuse(op, "allocationId", v, "is not an allocation id");
  return v;
}

function _kind(op: HelperOp, v: unknown): FileKind {
  if (typeof v !== "string" || !(FILE_KINDS as readonly string[]).includes(v)) {
    _refuse(op, "kind", v, `is not one of ${FILE_KINDS.join(", ")}`);
  }
  return v as FileKind;
}

/** A hold slice name in its canonical spelling (`sliceName` of a valid allocation id). */
function _slice(op: HelperOp, v: unknown): string {
  const id = typeof v === "string" ? allocationIdOfSlice(v) : undefined;
  if (id === undefined || !isValidAllocationId(id) || sliceName(id) !== v) {
    _refuse(op, "name", v, "is not bcd-alloc-<allocation id>.slice");
  }
  return v as string;
}

function _env(op: HelperOp, v: unknown, ctx: HoldEnvContext): string[] {
  if (!Array.isArray(v) || v.length > MAX_ENV_LINES) {
    _refuse(op, "env", v, `is not a list of at most ${MAX_ENV_LINES} lines`);
  }
  const bytes = v.reduce((n: number, l: unknown) => n + (typeof l === "string" ? l.length + 1 : 0), 0);
  if (bytes > MAX_ENV_BYTES) _refuse(op, "env", v, `has ${bytes} bytes of lines, more than ${MAX_ENV_BYTES}`);
  const why = holdEnvProblem(v, ctx);
  if (why !== undefined) throw new HelperError("invalid-argument", `${op}: ${why}`);
  return [...v] as string[];
}

function _device(op: HelperOp, i: number, raw: unknown): WireHoldDevice {
  const path = `devices[${i}]`;
  const d = _object(op, path, raw, ["class", "atom", "gpuUuid", "cdiName", "minorNumber"], [
    "class",
    "atom",
    "gpuUuid",
    "cdiName",
  ]);
  if (typeof d.class !== "string" || !(DEVICE_CLASSES as readonly string[]).includes(d.class)) {
    _refuse(op, `${path}.class`, d.class, `is not one of ${DEVICE_CLASSES.join(", ")}`);
  }
  const cls = d.class as DeviceClass;
  if (typeof d.atom !== "string" || classOfAtom(d.atom) !== cls) {
    _refuse(op, `${path}.atom`, d.atom, `is not a ${cls} atom`);
  }
  const atom = d.atom as string;
  if (d.gpuUuid !== atom.split("/")[0]) _refuse(op, `${path}.gpuUuid`, d.gpuUuid, `is not the GPU of ${atom}`);
  if (d.cdiName !== cdiDeviceName(atom)) _refuse(op, `${path}.cdiName`, d.cdiName, `is not the CDI name of ${atom}`);
  const minor = d.minorNumber;
  if (
    minor !== undefined && (typeof minor !== "number" || !Number.isSafeInteger(minor) || minor < 0 || minor > MAX_MINOR)
  ) {
    _refuse(op, `${path}.minorNumber`, minor, `is not a minor number (0 to ${MAX_MINOR})`);
  }
  return {
    class: cls,
    atom,
    gpuUuid: atom.split("/")[0]!,
    cdiName: cdiDeviceName(atom),
    ...(minor !== undefined ? { minorNumber: minor as number } : {}),
  };
}

function _fileWrite(raw: unknown): CdiWriteArgs | EnvWriteArgs {
  const op = "file.write";
  const head = _object(op, "args", raw, ["kind", "allocationId", "binding", "devices", "env", "cgroupParent"], [
    "kind",
    "allocationId",
  ]);
  const kind = _kind(op, head.kind);
  if (kind === "allocation-env") {
    const a = _object(op, "args", raw, ["kind", "allocationId", "env"]);
    const allocationId = _allocationId(op, a.allocationId);
    return { kind, allocationId, env: _env(op, a.env, { allocationId, cgroupParent: sliceName(allocationId) }) };
  }
  const a = _object(op, "args", raw, ["kind", "allocationId", "binding", "devices", "env", "cgroupParent"], [
    "kind",
    "allocationId",
    "binding",
    "devices",
    "env",
  ]);
  const allocationId = _allocationId(op, a.allocationId);
  if (a.binding !== "hold" && a.binding !== "kubernetes") {
    _refuse(op, "binding", a.binding, "is not hold or kubernetes");
  }
  if (!Array.isArray(a.devices) || a.devices.length === 0 || a.devices.length > MAX_WRITE_DEVICES) {
    _refuse(op, "devices", a.devices, `is not a list of 1 to ${MAX_WRITE_DEVICES} devices`);
  }
  const devices = a.devices.map((d, i) => _device(op, i, d));
  if (a.cgroupParent !== undefined) {
    if (a.binding === "kubernetes") _refuse(op, "cgroupParent", a.cgroupParent, "is set on a kubernetes hold");
    if (a.cgroupParent !== sliceName(allocationId)) {
      _refuse(op, "cgroupParent", a.cgroupParent, `is not the hold's own slice ${sliceName(allocationId)}`);
    }
  }
  const env = _env(op, a.env, {
    allocationId,
    ...(a.cgroupParent !== undefined ? { cgroupParent: a.cgroupParent as string } : {}),
    exact: {
      binding: a.binding,
      gpuUuids: devices.filter((d) => d.class !== "gpu.mig").map((d) => d.gpuUuid),
      hasMig: devices.some((d) => d.class === "gpu.mig"),
      hasSlot: devices.some((d) => d.class === "gpu.slot"),
    },
  });
  return {
    kind,
    allocationId,
    binding: a.binding,
    devices,
    env,
    ...(a.cgroupParent !== undefined ? { cgroupParent: a.cgroupParent as string } : {}),
  };
}

function _settings(raw: unknown): SliceSettings {
  const op = "slice.apply";
  const s = _object(op, "args.settings", raw, _SETTINGS, []);
  try {
    return checkSliceRequest("bcd-alloc-x.slice", s).settings;
  } catch (e) {
    if (e instanceof RangeError) throw new HelperError("invalid-argument", `${op}: ${e.message}`, { cause: e });
    throw e;
  }
}

const _NONE: readonly string[] = [];

function _releaseVersion(op: string, v: unknown): string {
  if (typeof v !== "string" || !RELEASE_VERSION_RE.test(v) || v.includes("..")) {
    _refuse(op, "version", v, "is not a release version (1-64 of [0-9A-Za-z._+-], no ..)");
  }
  return v;
}

function _sha256(op: string, v: unknown): string {
  if (typeof v !== "string" || !/^[0-9a-f]{64}$/.test(v)) _refuse(op, "sha256", v, "is not 64 lowercase hex digits");
  return v;
}

function _plugin(op: HelperOp, raw: unknown): string {
  const a = _object(op, "args", raw, ["name"]);
  if (!isPluginName(a.name)) _refuse(op, "name", a.name, "is not a plugin name");
  return a.name;
}

/** The checkers, one per op. */
const _CHECK: { readonly [O in HelperOp]: (raw: unknown) => HelperArgs[O] } = {
  "host.boot_id": (raw) => (_object("host.boot_id", "args", raw, _NONE), {}),
  "host.inventory": (raw) => (_object("host.inventory", "args", raw, _NONE), {}),
  "host.memory": (raw) => (_object("host.memory", "args", raw, _NONE), {}),
  "host.memory_pressure": (raw) => (_object("host.memory_pressure", "args", raw, _NONE), {}),
  "host.doctor": (raw) => (_object("host.doctor", "args", raw, _NONE), {}),
  "daemon.status": (raw) => (_object("daemon.status", "args", raw, _NONE), {}),
  "daemon.install": (raw) => {
    const a = _object("daemon.install", "args", raw, ["version", "sha256", "signature"]);
    if (typeof a.signature !== "string" || !/^[A-Za-z0-9+/]{0,86}={0,2}$/.test(a.signature)) {
      _refuse("daemon.install", "signature", a.signature, "is not base64 of at most 64 bytes");
    }
    return {
      version: _releaseVersion("daemon.install", a.version),
      sha256: _sha256("daemon.install", a.sha256),
      signature: a.signature,
    };
  },
  "daemon.confirm": (raw) => ({
    version: _releaseVersion("daemon.confirm", _object("daemon.confirm", "args", raw, ["version"]).version),
  }),
  "pci.numa_node": (raw) => {
    const a = _object("pci.numa_node", "args", raw, ["pciBusId"]);
    if (typeof a.pciBusId !== "string" || !_PCI.test(a.pciBusId)) {
      _refuse("pci.numa_node", "pciBusId", a.pciBusId, "is not a PCI bus id");
    }
    return { pciBusId: a.pciBusId };
  },
  "holds.list": (raw) => (_object("holds.list", "args", raw, _NONE), {}),
  "file.write": _fileWrite,
  "file.remove": (raw) => {
    const a = _object("file.remove", "args", raw, ["kind", "allocationId"]);
    return { kind: _kind("file.remove", a.kind), allocationId: _allocationId("file.remove", a.allocationId) };
  },
  "slice.apply": (raw) => {
    const a = _object("slice.apply", "args", raw, ["name", "settings"]);
    return { name: _slice("slice.apply", a.name), settings: _settings(a.settings) };
  },
  "slice.remove": (raw) => ({ name: _slice("slice.remove", _object("slice.remove", "args", raw, ["name"]).name) }),
  "slice.list": (raw) => (_object("slice.list", "args", raw, _NONE), {}),
  "slice.usage": (raw) => ({ name: _slice("slice.usage", _object("slice.usage", "args", raw, ["name"]).name) }),
  "gpu.reset": (raw) => {
    const a = _object("gpu.reset", "args", raw, ["gpuUuid"]);
    if (typeof a.gpuUuid !== "string" || classOfAtom(a.gpuUuid) !== "gpu") {
      _refuse("gpu.reset", "gpuUuid", a.gpuUuid, "is not a GPU UUID");
    }
    return { gpuUuid: a.gpuUuid };
  },
  "dcgm.diag": (raw) => {
    const a = _object("dcgm.diag", "args", raw, ["level", "gpuUuids"]);
    if (a.level !== 1 && a.level !== 2 && a.level !== 3 && a.level !== 4) {
      _refuse("dcgm.diag", "level", a.level, "is not a dcgmi diag level (1 to 4)");
    }
    if (!Array.isArray(a.gpuUuids) || a.gpuUuids.length > 64) {
      _refuse("dcgm.diag", "gpuUuids", a.gpuUuids, "is not a list of at most 64 GPU UUIDs");
    }
    for (const u of a.gpuUuids) {
      if (typeof u !== "string" || classOfAtom(u) !== "gpu") _refuse("dcgm.diag", "gpuUuids", u, "is not a GPU UUID");
    }
    return { level: a.level, gpuUuids: [...new Set(a.gpuUuids as string[])] };
  },
  "node.reboot": (raw) => {
    const a = _object("node.reboot", "args", raw, ["reason"]);
    // deno-lint-ignore no-control-regex
    if (typeof a.reason !== "string" || a.reason.length > MAX_REASON || /[\u0000-\u001f\u007f]/.test(a.reason)) {
      _refuse("node.reboot", "reason", a.reason, `is not one line of at most ${MAX_REASON} characters`);
    }
    return { reason: a.reason };
  },
  "plugin.list": (raw) => (_object("plugin.list", "args", raw, _NONE), {}),
  "plugin.manifest": (raw) => ({ name: _plugin("plugin.manifest", raw) }),
  "plugin.attach": (raw) => ({ name: _plugin("plugin.attach", raw) }),
  ...NFT_ARG_CHECKS,
  ...HOST_ARG_CHECKS,
  ...LIBVIRT_CHECKS,
  ...CH_CHECKS,
  "access.observe": checkAccessObserve,
  "access.apply": checkAccessApply,
  ...DISK_ARG_CHECKS,
  ...KEXEC_ARG_CHECKS,
};

/**
 * Checks `raw` as the arguments of `op` and returns them typed; throws {@link HelperError} (`unknown-field` or
 * `invalid-argument`) naming what it refuses. Nothing has run when it throws.
 */
export function checkArgs<O extends HelperOp>(op: O, raw: unknown): HelperArgs[O] {
  return (_CHECK[op] as (raw: unknown) => HelperArgs[O])(raw ?? {});
}
