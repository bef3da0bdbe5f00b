/**
 * The `gpu-sharing` unit's settings and plan: how processes share the host's GPUs, either through an MPS control
 * daemon over a set of GPUs (pipes under `/run/nvidia-mps`, the directory the devices section names to slot holds in
 * `CUDA_MPS_PIPE_DIRECTORY`) or by CUDA's own time-slicing.
 *
 * Settings: `{"mode": "mps", "gpus"?: ["GPU-…", …], "activeThreadPercentage"?: 1–100}` or
 * `{"mode": "time-slicing"}`. Without `gpus`, MPS serves every GPU of the host.
 *
 * Choices the seed leaves open (its host-configuration page is not among the seeds), written down:
 * - MPS: each GPU of the set is put in `EXCLUSIVE_PROCESS` compute mode (`nvidia-smi -i <GPU> -c EXCLUSIVE_PROCESS`,
 *   NVIDIA's advice for MPS), then one control daemon is started for the set (`CUDA_VISIBLE_DEVICES` the set,
 *   `nvidia-cuda-mps-control -d`) with its default active thread percentage when given. A daemon serving another set
 *   or percentage, or one bcd did not start, is restarted as bcd's.
 * - Time-slicing is CUDA's default: bcd only stops the MPS daemon it started and gives back the compute modes it
 *   changed. An MPS daemon bcd did not start is never stopped: under `time-slicing` the unit fails, saying so.
 * - bcd records what it did (the daemon it started, each compute mode before bcd first set it); a unit dropped from
 *   the section gets exactly that undone.
 * - Stopping or restarting the daemon while a slot hold (`gpu.slot`) is bound would pull MPS from under its workload:
 *   the unit fails naming the hold instead.
 *
 * @module
 */
import { isGpuUuid } from "./mig_layout.ts";
import { integer, object, refuse } from "./schema.ts";

/** The compute mode MPS wants. */
export const MPS_COMPUTE_MODE = "Exclusive_Process";

/** The unit's checked settings. */
export type GpuSharingSettings =
  | { readonly mode: "mps"; readonly gpus?: readonly string[]; readonly activeThreadPercentage?: number }
  | { readonly mode: "time-slicing" };

/** Checks the unit's settings. */
export function parseGpuSharingSettings(raw: Record<string, unknown>): GpuSharingSettings {
  const head = object("gpu-sharing", "settings", raw, ["mode", "gpus", "activeThreadPercentage"], ["mode"]);
  if (head.mode === "time-slicing") {
    object("gpu-sharing", "settings", raw, ["mode"]);
    return { mode: "time-slicing" };
  }
  if (head.mode !== "mps") refuse("gpu-sharing", "settings.mode", head.mode, "is not mps or time-slicing");
  let gpus: string[] | undefined;
  if (head.gpus !== undefined) {
    if (!Array.isArray(head.gpus) || head.gpus.length < 1 || head.gpus.length > 64) {
      refuse("gpu-sharing", "settings.gpus", head.gpus, "is not a list of 1 to 64 GPU UUIDs");
    }
    for (const [i, g] of (head.gpus as unknown[]).entries()) {
      if (!isGpuUuid(g)) refuse("gpu-sharing", `settings.gpus[${i}]`, g, "is not a GPU UUID (GPU-…)");
    }
    gpus = [...new Set(head.gpus as string[])].sort();
  }
  const pct = head.activeThreadPercentage === undefined
    ? undefined
    : integer("gpu-sharing", "settings.activeThreadPercentage", head.activeThreadPercentage, 1, 100);
  return { mode: "mps", ...(gpus ? { gpus } : {}), ...(pct !== undefined ? { activeThreadPercentage: pct } : {}) };
}

/** What the helper reports. */
export interface SharingObserved {
  /** Each GPU's compute mode as nvidia-smi names it (`Default`, `Exclusive_Process`, `Prohibited`). */
  readonly gpus: readonly { readonly uuid: string; readonly computeMode: string }[];
  /** Whether an MPS control daemon answers on bcd's pipe directory. */
  readonly mpsRunning: boolean;
  /** The daemon bcd started and still records, with the set and percentage it started it for. */
  readonly mpsStarted?: { readonly gpus: readonly string[]; readonly activeThreadPercentage?: number };
  /** The compute modes bcd changed: GPU → its mode before bcd first set it. */
  readonly computeModes: Readonly<Record<string, string>>;
}

/** A step. */
export type SharingStep =
  | { readonly op: "mps-stop" }
  | { readonly op: "compute-mode"; readonly gpu: string }
  | { readonly op: "restore-compute-mode"; readonly gpu: string }
  | { readonly op: "mps-start"; readonly gpus: readonly string[]; readonly activeThreadPercentage?: number };

/** A change that cannot be made now; terminal at this generation. */
export class GpuSharingRefused extends Error {
  override name = "GpuSharingRefused";
}

/**
 * The minimal steps from `observed` to `desired` (`undefined`: the unit is not in the section), in the order they
 * run: a stop first, compute modes next, the start last. `slotHolds` are the allocation ids of the bound `gpu.slot`
 * holds; a stop or restart while any is bound throws {@link GpuSharingRefused} naming them, as does a listed GPU the
 * host lacks and, under `time-slicing`, an MPS daemon bcd did not start.
 */
export function planGpuSharing(
  desired: GpuSharingSettings | undefined,
  observed: SharingObserved,
  slotHolds: readonly string[],
): SharingStep[] {
  const host = new Set(observed.gpus.map((g) => g.uuid));
  const steps: SharingStep[] = [];
  const stop = (why: string) => {
    if (slotHolds.length) {
      throw new GpuSharingRefused(`gpu-sharing: ${why}, but slot hold ${slotHolds.join(", ")} uses MPS`);
    }
    steps.push({ op: "mps-stop" });
  };
  let set: string[] = [];
  if (desired?.mode === "mps") {
    set = [...(desired.gpus ?? [...host].sort())];
    if (set.length === 0) throw new GpuSharingRefused("gpu-sharing: this host has no GPU for MPS to serve");
    const missing = set.filter((g) => !host.has(g));
    if (missing.length) throw new GpuSharingRefused(`gpu-sharing: GPU ${missing.join(", ")} is not on this host`);
    const same = observed.mpsRunning && observed.mpsStarted !== undefined &&
      observed.mpsStarted.gpus.join(",") === set.join(",") &&
      observed.mpsStarted.activeThreadPercentage === desired.activeThreadPercentage;
    if (observed.mpsRunning && !same) stop("the MPS daemon must restart for another GPU set or percentage");
    for (const g of observed.gpus) {
      if (set.includes(g.uuid) && g.computeMode !== MPS_COMPUTE_MODE) steps.push({ op: "compute-mode", gpu: g.uuid });
    }
  } else if (observed.mpsRunning) {
    if (observed.mpsStarted !== undefined) stop("MPS is no longer wanted");
    else if (desired?.mode === "time-slicing") {
      throw new GpuSharingRefused("gpu-sharing: an MPS control daemon bcd did not start runs; bcd does not stop it");
    }
  }
  for (const gpu of Object.keys(observed.computeModes).sort()) {
    if (!set.includes(gpu) && host.has(gpu)) steps.push({ op: "restore-compute-mode", gpu });
  }
  if (desired?.mode === "mps" && (steps.some((s) => s.op === "mps-stop") || !observed.mpsRunning)) {
    const pct = desired.activeThreadPercentage;
    steps.push({ op: "mps-start", gpus: set, ...(pct !== undefined ? { activeThreadPercentage: pct } : {}) });
  }
  return steps;
}
