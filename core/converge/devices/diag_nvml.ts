/**
 * The `diag.nvml` kind: control lane, retry-safe, attested (node and ramdisk roles). It reads a fresh inventory and
 * diagnoses each GPU asked for (every GPU for an empty list): healthy unless it shows uncorrectable volatile ECC
 * errors, a pending or failed row remap, a required reset or a recovery action from the driver, or an XID this boot. The result follows `bcd.v1.DiagNvmlResult`, GPUs in
 * the order asked (by PCI bus id for all), so the attested result's SHA-256 is reproducible.
 *
 * @module
 */
import { findGpu, type GpuInfo, type GpuInventory, gpuProblems } from "./inventory.ts";
import type { GpuTool } from "./ports.ts";
import { GpuKindError, queryOrRefuse } from "./gpu_reset.ts";

/** One GPU's diagnosis (`bcd.v1.GpuDiagnosis`). */
export interface GpuDiagnosis {
  readonly gpu_uuid: string;
  readonly healthy: boolean;
  readonly problems: readonly string[];
  readonly temperature_c: number;
  readonly power_w: number;
  readonly ecc?: { readonly enabled: boolean; readonly volatile_uncorrectable: number };
  readonly remap?: { readonly pending: boolean; readonly failed: boolean };
  readonly xids: readonly number[];
  readonly pci_bus_id: string;
}

/** The `diag.nvml` result (`bcd.v1.DiagNvmlResult`). */
export interface DiagNvmlResult {
  readonly gpus: readonly GpuDiagnosis[];
}

/** The XIDs each GPU reported this boot (the XID conditions); none when the build does not watch them. */
export type XidSource = (gpuUuid: string) => readonly number[];

/** The XIDs a condition set holds for a GPU (`XidError` conditions, the code as the reason). */
export function xidsFromConditions(
  conditions: { report(): readonly { type: string; subject: string; status: string; reason: string }[] },
): XidSource {
  return (uuid) =>
    conditions.report()
      .filter((c) => c.type === "XidError" && c.subject === uuid && c.status === "True" && /^\d{1,5}$/.test(c.reason))
      .map((c) => Number(c.reason));
}

const _MAX_GPUS = 64;

function _diagnose(g: GpuInfo, xids: readonly number[]): GpuDiagnosis {
  const problems = [
    ...gpuProblems(g),
    ...(g.resetRequired ? ["reset required"] : []),
    ...(g.recoveryAction && g.recoveryAction !== "None" ? [`recovery action: ${g.recoveryAction}`] : []),
    ...xids.map((x) => `XID ${x}`),
  ];
  return {
    gpu_uuid: g.uuid,
    healthy: problems.length === 0,
    problems,
    temperature_c: g.temperatureC ?? 0,
    power_w: g.powerW ?? 0,
    ...(g.eccVolatileUncorrectable !== undefined
      ? { ecc: { enabled: true, volatile_uncorrectable: g.eccVolatileUncorrectable } }
      : {}),
    ...(g.remap ? { remap: { pending: g.remap.pending, failed: g.remap.failed } } : {}),
    xids: [...xids],
    pci_bus_id: g.pciBusId,
  };
}

/** The diagnosis of `gpuUuids` (all GPUs, by PCI bus id, when empty); an unknown GPU reads `unknown GPU`. */
export function diagFromInventory(
  inv: GpuInventory,
  gpuUuids: readonly string[] = [],
  xids?: XidSource,
): DiagNvmlResult {
  if (gpuUuids.length > _MAX_GPUS) throw new GpuKindError("invalid-payload", `gpu_uuids lists more than ${_MAX_GPUS}`);
  const seen = xids ?? (() => []);
  if (gpuUuids.length === 0) {
    const all = [...inv.gpus].sort((a, b) => a.pciBusId < b.pciBusId ? -1 : a.pciBusId > b.pciBusId ? 1 : 0);
    return { gpus: all.map((g) => _diagnose(g, seen(g.uuid))) };
  }
  return {
    gpus: [...new Set(gpuUuids)].map((u) => {
      const g = findGpu(inv, u);
      return g ? _diagnose(g, seen(u)) : {
        gpu_uuid: u,
        healthy: false,
        problems: ["unknown GPU"],
        temperature_c: 0,
        power_w: 0,
        xids: [],
        pci_bus_id: "",
      };
    }),
  };
}

/** Runs `diag.nvml` over a fresh inventory. */
export async function diagNvml(
  payload: { readonly gpu_uuids?: readonly string[] },
  gpu: GpuTool,
  xids?: XidSource,
): Promise<DiagNvmlResult> {
  return diagFromInventory(await queryOrRefuse(gpu, "diag.nvml"), payload.gpu_uuids ?? [], xids);
}
