/**
 * The env rules of 000 §Device assignments. Devices carry no env of their own; a hold's spec has one spec-level
 * `NVIDIA_VISIBLE_DEVICES` listing what the driver knows (a MIG instance's UUID; a GPU once, however many of its slots
 * are held), none for Kubernetes holds; every workload gets `BCD_ALLOCATION_ID`; a slot hold gets
 * `CUDA_MPS_PIPE_DIRECTORY` when the MPS directory exists; a hold with a slice gets `BCD_CGROUP_PARENT`.
 *
 * An assignment's extra lines ({@link extraEnvProblem}) may not set those reserved keys, nor a key twice. Two rules
 * the seed leaves open are ours, written down here: a value reads the same to every reader of the env file and the
 * CDI spec (docker's `--env-file`, systemd's `EnvironmentFile=`, a CDI `containerEdits.env`), so it carries no
 * control character (C0, DEL, C1), no line or paragraph separator (U+2028, U+2029) and none of `$`, `` ` ``, `\`,
 * `"`, `'` (which systemd and shells expand, unescape or strip); and no key of the dynamic loader (`LD_*`), which
 * would run code of the line's choosing in every process of the hold before the workload starts. The root helper
 * checks the same rules again ({@link holdEnvProblem}), since it is the boundary.
 *
 * @module
 */
import type { HoldBinding } from "./assignment.ts";
import type { ResolvedDevice } from "./classes.ts";
import { AllocationRefused } from "./reasons.ts";

/** The MPS pipe directory the `gpu-sharing` unit runs MPS with. */
export const MPS_PIPE_DIRECTORY = "/run/nvidia-mps";

/** The env keys bcd sets itself; an assignment's extra lines may not set them. */
export const RESERVED_ENV_KEYS: readonly string[] = [
  "NVIDIA_VISIBLE_DEVICES",
  "BCD_ALLOCATION_ID",
  "CUDA_MPS_PIPE_DIRECTORY",
  "BCD_CGROUP_PARENT",
];

/** Inputs of {@link holdEnv}. */
export interface HoldEnvInput {
  readonly allocationId: string;
  readonly binding: HoldBinding;
  readonly devices: readonly Pick<ResolvedDevice, "class" | "visibleId">[];
  readonly extra?: readonly string[];
  /** The slice name, when the hold has one. */
  readonly cgroupParent?: string;
  /** The MPS pipe directory when it exists on the host, else `undefined`. */
  readonly mpsPipeDirectory?: string;
}

/** One env line: `KEY=VALUE`, a shell-safe key, a value on one line (also what the root helper accepts). */
export const ENV_LINE = /^[A-Za-z_][A-Za-z0-9_]{0,127}=[^\n\r\0]{0,4096}$/;

/** A value for a message: JSON, cut at 80 characters. */
function _show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** A character no env value carries (see the module doc). */
// deno-lint-ignore no-control-regex
const _BAD_VALUE_CHAR = /[\u0000-\u001f\u007f-\u009f\u2028\u2029$`\\"']/;

/** The key of a `KEY=VALUE` line. */
export function envKey(line: string): string {
  return line.slice(0, line.indexOf("="));
}

/**
 * Why `line` is not a well-formed env line, or `undefined`: the shape for every line; for a key bcd does not reserve
 * (whose values bcd checks exactly instead), the value's characters and no loader key.
 */
export function envLineProblem(line: unknown): string | undefined {
  if (typeof line !== "string" || !ENV_LINE.test(line)) return "is not KEY=VALUE on one line";
  if (RESERVED_ENV_KEYS.includes(envKey(line))) return undefined;
  const bad = _BAD_VALUE_CHAR.exec(line.slice(line.indexOf("=") + 1));
  if (bad) {
    const u = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    return `carries ${JSON.stringify(bad[0])} (U+${u}) in its value, which env readers expand, unescape or strip`;
  }
  if (envKey(line).startsWith("LD_")) return `sets ${envKey(line)}, a key of the dynamic loader`;
  return undefined;
}

/** Why an assignment's extra line is refused, or `undefined`: {@link envLineProblem}, or a reserved key. */
export function extraEnvProblem(line: unknown): string | undefined {
  const p = envLineProblem(line);
  if (p !== undefined) return p;
  const key = envKey(line as string);
  if (RESERVED_ENV_KEYS.includes(key)) return `sets ${key}, which bcd sets itself`;
  return undefined;
}

/** What the hold is, for {@link holdEnvProblem}: the helper knows it from the request it checks. */
export interface HoldEnvContext {
  readonly allocationId: string;
  /** The slice name the hold's env must carry as `BCD_CGROUP_PARENT`; `undefined`: none (or unknown, see `exact`). */
  readonly cgroupParent?: string;
  /**
   * Known exactly (a CDI write names binding, devices and cgroup parent): then `NVIDIA_VISIBLE_DEVICES` is present
   * only for a `hold` binding and names the devices' GPUs (MIG UUIDs only with MIG devices), `BCD_CGROUP_PARENT` only
   * with a cgroup parent and `CUDA_MPS_PIPE_DIRECTORY` only with a slot. An env file's write names none of those:
   * each key is then only checked to be what bcd would write, if present.
   */
  readonly exact?: {
    readonly binding: HoldBinding;
    readonly gpuUuids: readonly string[];
    readonly hasMig: boolean;
    readonly hasSlot: boolean;
  };
}

const _VISIBLE_ID = /^(?:GPU|MIG)-[A-Za-z0-9/-]{1,80}$/;

/**
 * Why `lines` are not env lines bcd would write for the hold `ctx`, or `undefined`: each line well formed, no key
 * twice, `BCD_ALLOCATION_ID` the hold's, and each other reserved key exactly what bcd sets (module doc). The root
 * helper's check: a forged `BCD_CGROUP_PARENT=system.slice` or `NVIDIA_VISIBLE_DEVICES=all` never reaches a file.
 */
export function holdEnvProblem(lines: readonly unknown[], ctx: HoldEnvContext): string | undefined {
  const seen = new Map<string, string>();
  for (const [i, line] of lines.entries()) {
    const p = envLineProblem(line);
    if (p !== undefined) return `env[${i}] ${_show(line)} ${p}`;
    const key = envKey(line as string);
    if (seen.has(key)) return `env[${i}] sets ${key} a second time`;
    seen.set(key, (line as string).slice(key.length + 1));
  }
  const id = seen.get("BCD_ALLOCATION_ID");
  if (id !== ctx.allocationId) return `env does not carry BCD_ALLOCATION_ID=${ctx.allocationId}`;
  const parent = seen.get("BCD_CGROUP_PARENT");
  if (parent !== undefined && parent !== ctx.cgroupParent) {
    return `env sets BCD_CGROUP_PARENT=${parent}, not the hold's own slice`;
  }
  const mps = seen.get("CUDA_MPS_PIPE_DIRECTORY");
  if (mps !== undefined && mps !== MPS_PIPE_DIRECTORY) {
    return `env sets CUDA_MPS_PIPE_DIRECTORY=${mps}, not ${MPS_PIPE_DIRECTORY}`;
  }
  const visible = seen.get("NVIDIA_VISIBLE_DEVICES");
  const ids = visible === undefined ? [] : visible.split(",");
  if (visible !== undefined && !ids.every((v) => _VISIBLE_ID.test(v))) {
    return `env sets NVIDIA_VISIBLE_DEVICES=${visible}, not a list of GPU or MIG UUIDs`;
  }
  const x = ctx.exact;
  if (x === undefined) return undefined;
  if (x.binding === "kubernetes" && visible !== undefined) {
    return "env sets NVIDIA_VISIBLE_DEVICES on a kubernetes hold";
  }
  if (x.binding === "hold" && visible === undefined) return "env of a hold does not set NVIDIA_VISIBLE_DEVICES";
  for (const v of ids) {
    if (v.startsWith("MIG-") ? !x.hasMig : !x.gpuUuids.includes(v)) {
      return `env's NVIDIA_VISIBLE_DEVICES names ${v}, which is not one of the hold's devices`;
    }
  }
  if (parent === undefined && ctx.cgroupParent !== undefined) {
    return `env does not carry BCD_CGROUP_PARENT=${ctx.cgroupParent}`;
  }
  if (mps !== undefined && !x.hasSlot) return "env sets CUDA_MPS_PIPE_DIRECTORY on a hold without a slot";
  return undefined;
}

/** The env lines of a hold, in a fixed order: bcd's own first, then the assignment's extra lines. */
export function holdEnv(i: HoldEnvInput): string[] {
  const out: string[] = [];
  if (i.binding === "hold") {
    const visible = [...new Set(i.devices.map((d) => d.visibleId))];
    out.push(`NVIDIA_VISIBLE_DEVICES=${visible.join(",")}`);
  }
  out.push(`BCD_ALLOCATION_ID=${i.allocationId}`);
  if (i.mpsPipeDirectory !== undefined && i.devices.some((d) => d.class === "gpu.slot")) {
    out.push(`CUDA_MPS_PIPE_DIRECTORY=${i.mpsPipeDirectory}`);
  }
  if (i.cgroupParent !== undefined) out.push(`BCD_CGROUP_PARENT=${i.cgroupParent}`);
  const keys = new Set<string>();
  for (const line of i.extra ?? []) {
    const why = extraEnvProblem(line);
    if (why !== undefined) {
      throw new AllocationRefused("invalid-assignment", `env line ${JSON.stringify(line)} ${why}`);
    }
    if (keys.has(envKey(line))) {
      throw new AllocationRefused("invalid-assignment", `env line ${JSON.stringify(line)} sets ${envKey(line)} twice`);
    }
    keys.add(envKey(line));
    out.push(line);
  }
  return out;
}
