/**
 * The helper's argument checks for the host section's units (000 §NodeSpec, the `host` row): the node names sysctl
 * keys, huge page pools and kernel modules, never a path or a command line; root builds `/proc/sys/<key with / for .>`,
 * its fixed files `/etc/sysctl.d/90-bcd.conf`, `/etc/modules-load.d/bcd.conf` and `/etc/modprobe.d/bcd.conf`, the
 * sysfs `nr_hugepages` paths, the argv of modprobe, dpkg-query, apt-get and systemctl (whose service it names
 * itself, per unit), and kubeadm's argv and its 0600 join configuration itself.
 *
 * | op                | fields  | rule                                                                          |
 * | ----------------- | ------- | ----------------------------------------------------------------------------- |
 * | `sysctl.read`     | `keys`  | at most 256 keys, each under an allowed prefix (`core/host/sysctl.ts`)        |
 * | `sysctl.apply`    | `steps` | 1–256 of `{op: "set", key, value}` (one line, ≤ 256 chars) or `{op: "restore", key}` |
 * | `hugepages.read`  | none    |                                                                               |
 * | `hugepages.apply` | `steps` | 1–64 of `{op: "set", size, node?, count}` or `{op: "restore", size, node?}`; size `2M`/`1G`, node 0–1023 |
 * | `modules.read`    | none    |                                                                               |
 * | `mig.read`        | none    |                                                                               |
 * | `mig.apply`       | `steps` | 1–128 of `{op: "create", gpu, profile}` or `{op: "destroy", gpu, gi, cis}`; gpu `GPU-…`, profile `<n>g.<m>gb[+me\|+gfx]`, gi 0–63, cis 1–8 ids 0–63; root refuses a destroy of an instance, or any step on a GPU, that a hold file names |
 * | `sharing.read`    | none    |                                                                               |
 * | `sharing.apply`   | `steps` | 1–130 of `{op: "mps-stop"}`, `{op: "compute-mode", gpu}`, `{op: "restore-compute-mode", gpu}` or `{op: "mps-start", gpus, activeThreadPercentage?}` (1–64 GPU UUIDs, 1–100); root refuses a stop while a slot hold file is bound |
 * | `package.read`    | `unit`, `package` | unit `nvidia-driver`, `fabric-manager` or `container-toolkit`; package 2–64 of `[a-z0-9+.-]` with one of the unit's prefixes (`core/host/packages.ts`) |
 * | `package.apply`   | `unit`, `package`, `steps` | as above; 1–2 of `{op: "install", package, version}` (the same package; version a Debian version) or `{op: "service"}` (only a unit with a service) |
 * | `kube.read`, `kube.reset` | none |                                                                       |
 * | `kube.join`       | `apiServerEndpoint`, `caCertHashes`, `nodeName?`, `labels`, `taints`, `token` | host:port; 1–16 `sha256:<hex>`; a DNS subdomain; label keys/values the kubelet takes; taints `{key, value?, effect}`; a bootstrap token `[a-z0-9]{6}.[a-z0-9]{16}`, refused without showing it (`core/host/kubernetes_join.ts`) |
 * | `modules.apply`   | `steps` | 1–128 of `{op: "load", name, options?}` or `{op: "drop", name, unload}`; name 1–56 of `[a-z0-9_]` (the kernel's spelling), options space-separated `key`/`key=value` tokens (`core/host/kernel_modules.ts`), unload a boolean |
 *
 * @module
 */
import { HUGEPAGE_SIZES, type HugepageStep, isHugepageSize, MAX_HUGEPAGES, MAX_NUMA_NODE } from "../host/hugepages.ts";
import { isAllowedSysctlKey, isSysctlValue, MAX_SYSCTL_KEYS, type SysctlStep } from "../host/sysctl.ts";
import { isModuleName, isModuleOptions, type KernelModuleStep, MAX_MODULES } from "../host/kernel_modules.ts";
import { isGpuUuid, isMigProfile, type MigStep } from "../host/mig_layout.ts";
import type { SharingStep } from "../host/gpu_sharing.ts";
import {
  isPackageUnit,
  isPackageVersion,
  isUnitPackage,
  PACKAGE_UNITS,
  type PackageStep,
  type PackageUnit,
  UNIT_SERVICES,
} from "../host/packages.ts";
import {
  isApiServerEndpoint,
  isBootstrapToken,
  isCaCertHash,
  isDnsSubdomain,
  type KubeJoin,
  labelsProblem,
  MAX_CA_HASHES,
  MAX_NODE_TAINTS,
  type NodeTaint,
  taintProblem,
} from "../host/kubernetes_join.ts";
import { argObject as _fields, refuseArg as _refuse } from "./arg_fields.ts";
import { HelperError } from "./errors.ts";
import type { HelperArgs } from "./protocol.ts";

function _list(op: string, v: unknown, min: number, max: number): unknown[] {
  if (!Array.isArray(v) || v.length < min || v.length > max) {
    _refuse(op, "steps", v, `is not a list of ${min} to ${max}`);
  }
  return v;
}

function _key(op: string, field: string, v: unknown): string {
  if (typeof v !== "string" || !isAllowedSysctlKey(v)) _refuse(op, field, v, "is not an allowed sysctl key");
  return v;
}

function _int(op: string, field: string, v: unknown, max: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0 || v > max) {
    _refuse(op, field, v, `is not an integer from 0 to ${max}`);
  }
  return v;
}

function _sysctlStep(raw: unknown, i: number): SysctlStep {
  const op = "sysctl.apply";
  const path = `steps[${i}]`;
  const head = _fields(op, path, raw, ["op", "key", "value"], ["op", "key"]);
  if (head.op === "set") {
    const s = _fields(op, path, raw, ["op", "key", "value"]);
    if (typeof s.value !== "string" || !isSysctlValue(s.value)) {
      _refuse(op, `${path}.value`, s.value, "is not one line");
    }
    return { op: "set", key: _key(op, `${path}.key`, s.key), value: s.value };
  }
  if (head.op === "restore") {
    const s = _fields(op, path, raw, ["op", "key"]);
    return { op: "restore", key: _key(op, `${path}.key`, s.key) };
  }
  _refuse(op, `${path}.op`, head.op, "is not set or restore");
}

function _hugeStep(raw: unknown, i: number): HugepageStep {
  const op = "hugepages.apply";
  const path = `steps[${i}]`;
  const head = _fields(op, path, raw, ["op", "size", "node", "count"], ["op", "size"]);
  const allowed = head.op === "set" ? ["op", "size", "node", "count"] : ["op", "size", "node"];
  if (head.op !== "set" && head.op !== "restore") _refuse(op, `${path}.op`, head.op, "is not set or restore");
  const s = _fields(op, path, raw, allowed, head.op === "set" ? ["op", "size", "count"] : ["op", "size"]);
  if (!isHugepageSize(s.size)) {
    _refuse(op, `${path}.size`, s.size, `is not one of ${Object.keys(HUGEPAGE_SIZES).join(", ")}`);
  }
  const node = s.node === undefined ? {} : { node: _int(op, `${path}.node`, s.node, MAX_NUMA_NODE) };
  if (head.op === "restore") return { op: "restore", size: s.size, ...node };
  return { op: "set", size: s.size, ...node, count: _int(op, `${path}.count`, s.count, MAX_HUGEPAGES) };
}

function _moduleStep(raw: unknown, i: number): KernelModuleStep {
  const op = "modules.apply";
  const path = `steps[${i}]`;
  const head = _fields(op, path, raw, ["op", "name", "options", "unload"], ["op", "name"]);
  if (head.op !== "load" && head.op !== "drop") _refuse(op, `${path}.op`, head.op, "is not load or drop");
  const s = head.op === "load"
    ? _fields(op, path, raw, ["op", "name", "options"], ["op", "name"])
    : _fields(op, path, raw, ["op", "name", "unload"]);
  // The kernel's spelling only (the node sends `moduleKey`'s), so one module has one record.
  if (!isModuleName(s.name) || s.name.includes("-")) {
    _refuse(op, `${path}.name`, s.name, "is not a module name (1-56 of a-z 0-9 _)");
  }
  if (head.op === "drop") {
    if (typeof s.unload !== "boolean") _refuse(op, `${path}.unload`, s.unload, "is not a boolean");
    return { op: "drop", name: s.name, unload: s.unload };
  }
  if (s.options !== undefined && !isModuleOptions(s.options)) {
    _refuse(op, `${path}.options`, s.options, "is not space-separated key or key=value tokens");
  }
  return { op: "load", name: s.name, ...(s.options !== undefined ? { options: s.options } : {}) };
}

function _unitPackage(op: string, a: Record<string, unknown>): { unit: PackageUnit; package: string } {
  if (!isPackageUnit(a.unit)) _refuse(op, "unit", a.unit, `is not one of ${PACKAGE_UNITS.join(", ")}`);
  if (!isUnitPackage(a.unit, a.package)) _refuse(op, "package", a.package, `is not a package of ${a.unit}`);
  return { unit: a.unit, package: a.package };
}

function _packageStep(unit: PackageUnit, pkg: string, raw: unknown, i: number): PackageStep {
  const op = "package.apply";
  const path = `steps[${i}]`;
  const head = _fields(op, path, raw, ["op", "package", "version"], ["op"]);
  if (head.op === "service") {
    _fields(op, path, raw, ["op"]);
    if (UNIT_SERVICES[unit] === undefined) _refuse(op, `${path}.op`, head.op, `: ${unit} has no service`);
    return { op: "service" };
  }
  if (head.op !== "install") _refuse(op, `${path}.op`, head.op, "is not install or service");
  const s = _fields(op, path, raw, ["op", "package", "version"], ["op", "package", "version"]);
  if (s.package !== pkg) _refuse(op, `${path}.package`, s.package, `is not the request's package ${pkg}`);
  if (!isPackageVersion(s.version)) _refuse(op, `${path}.version`, s.version, "is not a Debian package version");
  return { op: "install", package: pkg, version: s.version };
}

function _migStep(raw: unknown, i: number): MigStep {
  const op = "mig.apply";
  const path = `steps[${i}]`;
  const head = _fields(op, path, raw, ["op", "gpu", "profile", "gi", "cis"], ["op", "gpu"]);
  if (!isGpuUuid(head.gpu)) _refuse(op, `${path}.gpu`, head.gpu, "is not a GPU UUID");
  if (head.op === "create") {
    const s = _fields(op, path, raw, ["op", "gpu", "profile"]);
    if (!isMigProfile(s.profile)) _refuse(op, `${path}.profile`, s.profile, "is not a MIG profile");
    return { op: "create", gpu: head.gpu, profile: s.profile };
  }
  if (head.op !== "destroy") _refuse(op, `${path}.op`, head.op, "is not create or destroy");
  const s = _fields(op, path, raw, ["op", "gpu", "gi", "cis"]);
  const gi = _int(op, `${path}.gi`, s.gi, 63);
  if (!Array.isArray(s.cis) || s.cis.length < 1 || s.cis.length > 8) {
    _refuse(op, `${path}.cis`, s.cis, "is not a list of 1 to 8 compute instance ids");
  }
  return { op: "destroy", gpu: head.gpu, gi, cis: s.cis.map((c, j) => _int(op, `${path}.cis[${j}]`, c, 63)) };
}

function _gpu(op: string, field: string, v: unknown): string {
  if (!isGpuUuid(v)) _refuse(op, field, v, "is not a GPU UUID");
  return v;
}

function _sharingStep(raw: unknown, i: number): SharingStep {
  const op = "sharing.apply";
  const path = `steps[${i}]`;
  const head = _fields(op, path, raw, ["op", "gpu", "gpus", "activeThreadPercentage"], ["op"]);
  switch (head.op) {
    case "mps-stop":
      _fields(op, path, raw, ["op"]);
      return { op: "mps-stop" };
    case "compute-mode":
    case "restore-compute-mode": {
      const s = _fields(op, path, raw, ["op", "gpu"]);
      return { op: head.op, gpu: _gpu(op, `${path}.gpu`, s.gpu) };
    }
    case "mps-start": {
      const s = _fields(op, path, raw, ["op", "gpus", "activeThreadPercentage"], ["op", "gpus"]);
      if (!Array.isArray(s.gpus) || s.gpus.length < 1 || s.gpus.length > 64) {
        _refuse(op, `${path}.gpus`, s.gpus, "is not a list of 1 to 64 GPU UUIDs");
      }
      const gpus = s.gpus.map((g, j) => _gpu(op, `${path}.gpus[${j}]`, g));
      if (s.activeThreadPercentage === undefined) return { op: "mps-start", gpus };
      const pct = _int(op, `${path}.activeThreadPercentage`, s.activeThreadPercentage, 100);
      if (pct < 1) _refuse(op, `${path}.activeThreadPercentage`, pct, "is not from 1 to 100");
      return { op: "mps-start", gpus, activeThreadPercentage: pct };
    }
  }
  _refuse(op, `${path}.op`, head.op, "is not mps-stop, compute-mode, restore-compute-mode or mps-start");
}

function _kubeJoin(raw: unknown): KubeJoin & { token: string } {
  const op = "kube.join";
  const a = _fields(op, "args", raw, ["apiServerEndpoint", "caCertHashes", "nodeName", "labels", "taints", "token"], [
    "apiServerEndpoint",
    "caCertHashes",
    "labels",
    "taints",
    "token",
  ]);
  // The token first, and never shown: a refusal is logged and answered.
  if (!isBootstrapToken(a.token)) {
    throw new HelperError("invalid-argument", `${op}: token is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})`);
  }
  if (!isApiServerEndpoint(a.apiServerEndpoint)) {
    _refuse(op, "apiServerEndpoint", a.apiServerEndpoint, "is not host:port");
  }
  if (!Array.isArray(a.caCertHashes) || a.caCertHashes.length < 1 || a.caCertHashes.length > MAX_CA_HASHES) {
    _refuse(op, "caCertHashes", a.caCertHashes, `is not a list of 1 to ${MAX_CA_HASHES} CA key hashes`);
  }
  for (const h of a.caCertHashes) if (!isCaCertHash(h)) _refuse(op, "caCertHashes", h, "is not sha256:<64 hex>");
  if (a.nodeName !== undefined && !isDnsSubdomain(a.nodeName)) {
    _refuse(op, "nodeName", a.nodeName, "is not a DNS subdomain");
  }
  const lwhy = labelsProblem(a.labels);
  if (lwhy !== undefined) _refuse(op, "labels", a.labels, lwhy);
  if (!Array.isArray(a.taints) || a.taints.length > MAX_NODE_TAINTS) {
    _refuse(op, "taints", a.taints, `is not a list of at most ${MAX_NODE_TAINTS} taints`);
  }
  a.taints.forEach((t, i) => {
    const why = taintProblem(t);
    if (why !== undefined) _refuse(op, `taints[${i}]`, t, why);
  });
  return {
    apiServerEndpoint: a.apiServerEndpoint,
    caCertHashes: [...a.caCertHashes as string[]],
    ...(a.nodeName !== undefined ? { nodeName: a.nodeName } : {}),
    labels: { ...a.labels as Record<string, string> },
    taints: (a.taints as NodeTaint[]).map((t) => ({
      key: t.key,
      ...(t.value !== undefined ? { value: t.value } : {}),
      effect: t.effect,
    })),
    token: a.token,
  };
}

/** The checkers of the host unit ops, joined into the helper's argument table. */
export const HOST_ARG_CHECKS: {
  readonly "sysctl.read": (raw: unknown) => HelperArgs["sysctl.read"];
  readonly "sysctl.apply": (raw: unknown) => HelperArgs["sysctl.apply"];
  readonly "hugepages.read": (raw: unknown) => HelperArgs["hugepages.read"];
  readonly "hugepages.apply": (raw: unknown) => HelperArgs["hugepages.apply"];
  readonly "modules.read": (raw: unknown) => HelperArgs["modules.read"];
  readonly "modules.apply": (raw: unknown) => HelperArgs["modules.apply"];
  readonly "mig.read": (raw: unknown) => HelperArgs["mig.read"];
  readonly "mig.apply": (raw: unknown) => HelperArgs["mig.apply"];
  readonly "sharing.read": (raw: unknown) => HelperArgs["sharing.read"];
  readonly "sharing.apply": (raw: unknown) => HelperArgs["sharing.apply"];
  readonly "package.read": (raw: unknown) => HelperArgs["package.read"];
  readonly "package.apply": (raw: unknown) => HelperArgs["package.apply"];
  readonly "kube.read": (raw: unknown) => HelperArgs["kube.read"];
  readonly "kube.join": (raw: unknown) => HelperArgs["kube.join"];
  readonly "kube.reset": (raw: unknown) => HelperArgs["kube.reset"];
} = {
  "sysctl.read": (raw) => {
    const a = _fields("sysctl.read", "args", raw, ["keys"]);
    if (!Array.isArray(a.keys) || a.keys.length > MAX_SYSCTL_KEYS) {
      _refuse("sysctl.read", "keys", a.keys, `is not a list of at most ${MAX_SYSCTL_KEYS} keys`);
    }
    return { keys: a.keys.map((k, i) => _key("sysctl.read", `keys[${i}]`, k)) };
  },
  "sysctl.apply": (raw) => {
    const a = _fields("sysctl.apply", "args", raw, ["steps"]);
    return { steps: _list("sysctl.apply", a.steps, 1, MAX_SYSCTL_KEYS).map(_sysctlStep) };
  },
  "hugepages.read": (raw) => (_fields("hugepages.read", "args", raw, []), {}),
  "hugepages.apply": (raw) => {
    const a = _fields("hugepages.apply", "args", raw, ["steps"]);
    return { steps: _list("hugepages.apply", a.steps, 1, 64).map(_hugeStep) };
  },
  "modules.read": (raw) => (_fields("modules.read", "args", raw, []), {}),
  "modules.apply": (raw) => {
    const a = _fields("modules.apply", "args", raw, ["steps"]);
    return { steps: _list("modules.apply", a.steps, 1, 2 * MAX_MODULES).map(_moduleStep) };
  },
  "mig.read": (raw) => (_fields("mig.read", "args", raw, []), {}),
  "mig.apply": (raw) => {
    const a = _fields("mig.apply", "args", raw, ["steps"]);
    return { steps: _list("mig.apply", a.steps, 1, 128).map(_migStep) };
  },
  "sharing.read": (raw) => (_fields("sharing.read", "args", raw, []), {}),
  "sharing.apply": (raw) => {
    const a = _fields("sharing.apply", "args", raw, ["steps"]);
    return { steps: _list("sharing.apply", a.steps, 1, 130).map(_sharingStep) };
  },
  "package.read": (raw) => _unitPackage("package.read", _fields("package.read", "args", raw, ["unit", "package"])),
  "package.apply": (raw) => {
    const a = _fields("package.apply", "args", raw, ["unit", "package", "steps"]);
    const up = _unitPackage("package.apply", a);
    const steps = _list("package.apply", a.steps, 1, 2).map((r, i) => _packageStep(up.unit, up.package, r, i));
    return { ...up, steps };
  },
  "kube.read": (raw) => (_fields("kube.read", "args", raw, []), {}),
  "kube.join": _kubeJoin,
  "kube.reset": (raw) => (_fields("kube.reset", "args", raw, []), {}),
};
