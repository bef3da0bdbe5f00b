/**
 * The env rules of 000 §Device assignments. Devices carry no env of their own; a hold's spec has one spec-level
 * `NVIDIA_VISIBLE_DEVICES` listing what the driver knows (a MIG instance's UUID; a GPU once, however many of its slots
 * are held), none for Kubernetes holds; every workload gets `BCD_ALLOCATION_ID`; a slot hold gets
 * `CUDA_MPS_PIPE_DIRECTORY` when the MPS directory exists; a hold with a slice gets `BCD_CGROUP_PARENT`.
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
  for (const line of i.extra ?? []) {
    if (!ENV_LINE.test(line)) {
      throw new AllocationRefused(
        "invalid-assignment",
        `env line ${JSON.stringify(line)} is not KEY=VALUE on one line`,
      );
    }
    const key = line.slice(0, line.indexOf("="));
    if (RESERVED_ENV_KEYS.includes(key)) {
      throw new AllocationRefused("invalid-assignment", `env line sets ${key}, which bcd sets itself`);
    }
    out.push(line);
  }
  return out;
}
