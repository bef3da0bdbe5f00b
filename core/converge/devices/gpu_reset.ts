/**
 * The `gpu.reset` kind (000 §gpu.reset and live holds): control lane, destructive, attested, not retry-safe, node
 * role only. bcd checks the list before touching anything: an empty list fails `invalid-payload`; a GPU that a live
 * CDI hold names (whole, by a MIG instance or a slot) or that a VM has passed through fails the whole command
 * `gpu-busy`, naming the hold or the instance; a GPU the inventory does not know comes back `reset: false`,
 * `unknown GPU`. Each remaining GPU is reset; a fresh inventory then marks each reset GPU `healthy` unless it shows
 * uncorrectable volatile ECC errors or a pending or failed row remap, and a healthy reset clears its XID conditions.
 *
 * @module
 */
import type { PassthroughGpu } from "./conflicts.ts";
import type { ObservedHold, UnreadableHold } from "./hold.ts";
import { findGpu, type GpuInventory, gpuUnhealthyReason } from "./inventory.ts";
import { type GpuTool, GpuToolError, NO_GPU_DRIVER, NoGpuDriver, type XidConditions } from "./ports.ts";

/** The reasons a GPU kind fails as a whole. */
export type GpuKindFailure = "invalid-payload" | "gpu-busy" | typeof NO_GPU_DRIVER;

/** The GPU tool's inventory; a host without an NVIDIA driver refuses the kind as a whole, `no-gpu-driver`. */
export async function queryOrRefuse(gpu: Pick<GpuTool, "query">, kind: string): Promise<GpuInventory> {
  try {
    return await gpu.query();
  } catch (e) {
    if (e instanceof NoGpuDriver) throw new GpuKindError(NO_GPU_DRIVER, `${kind}: ${e.message}`, { cause: e });
    throw e;
  }
}

/** A GPU kind failed as a whole with a seed reason. */
export class GpuKindError extends Error {
  override name = "GpuKindError";
  constructor(readonly reason: GpuKindFailure, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The `gpu.reset` payload. */
export interface GpuResetPayload {
  readonly gpu_uuids: readonly string[];
}

/** One GPU's outcome. */
export interface GpuResetOutcome {
  readonly gpu_uuid: string;
  readonly reset: boolean;
  readonly healthy: boolean;
  readonly message: string;
}

/** The `gpu.reset` result. */
export interface GpuResetResult {
  readonly gpus: readonly GpuResetOutcome[];
}

/** What `gpu.reset` reads and acts through. */
export interface GpuResetPorts {
  readonly gpu: GpuTool;
  /** The live holds, read back from the CDI directory now. */
  readonly holds: () => Promise<{ holds: readonly ObservedHold[]; unreadable: readonly UnreadableHold[] }>;
  /** GPUs passed through to VMs now. */
  readonly passthrough: () => readonly PassthroughGpu[];
  readonly conditions: XidConditions;
}

/** The condition type of a GPU's XID errors; the subject is the GPU UUID and the reason the XID code. */
export const XID_CONDITION = "XidError";

/** The XID conditions of a condition set (`XidError`, subject the GPU UUID): a healthy reset clears a GPU's. */
export function xidConditionsOf(conditions: { clearType(type: string, subject?: string): void }): XidConditions {
  return { clearXid: (uuid) => conditions.clearType(XID_CONDITION, uuid) };
}

const _MAX_GPUS = 64;

/** Validates a decoded payload; throws `invalid-payload`. */
export function checkGpuResetPayload(p: unknown): GpuResetPayload {
  const list = (p as { gpu_uuids?: unknown } | null)?.gpu_uuids;
  if (!Array.isArray(list) || list.length === 0) {
    throw new GpuKindError("invalid-payload", "gpu.reset needs a non-empty gpu_uuids list");
  }
  if (list.length > _MAX_GPUS) throw new GpuKindError("invalid-payload", `gpu_uuids lists more than ${_MAX_GPUS} GPUs`);
  for (const u of list) {
    if (typeof u !== "string" || !/^[A-Za-z0-9:.-]{1,96}$/.test(u)) {
      throw new GpuKindError("invalid-payload", `gpu_uuids entry ${JSON.stringify(u)} is not a GPU id`);
    }
  }
  return { gpu_uuids: [...new Set(list as string[])] };
}

/** Who holds `uuid` now, as a sentence, or `undefined`. */
export function gpuHolder(
  uuid: string,
  holds: readonly ObservedHold[],
  unreadable: readonly UnreadableHold[],
  passthrough: readonly PassthroughGpu[],
): string | undefined {
  for (const h of holds) {
    const d = h.devices.find((x) => x.gpuUuid === uuid);
    if (d) return `GPU ${uuid} is held by allocation ${h.allocationId} (${d.class} ${d.atom})`;
  }
  const pt = passthrough.find((p) => p.gpuUuid === uuid);
  if (pt) return `GPU ${uuid} is passed through to instance ${pt.instance}`;
  const u = unreadable[0];
  if (u) return `hold ${u.allocationId} cannot be read (${u.problem}); it may hold GPU ${uuid}`;
  return undefined;
}

/** Runs `gpu.reset`. Throws {@link GpuKindError} for a failure of the whole command. */
export async function gpuReset(payload: unknown, ports: GpuResetPorts): Promise<GpuResetResult> {
  const { gpu_uuids } = checkGpuResetPayload(payload);
  const live = await ports.holds();
  const pt = ports.passthrough();
  for (const uuid of gpu_uuids) {
    const who = gpuHolder(uuid, live.holds, live.unreadable, pt);
    if (who) throw new GpuKindError("gpu-busy", who);
  }
  const before = await queryOrRefuse(ports.gpu, "gpu.reset");
  const out = new Map<string, GpuResetOutcome>();
  const reset: string[] = [];
  for (const uuid of gpu_uuids) {
    if (!findGpu(before, uuid)) {
      out.set(uuid, { gpu_uuid: uuid, reset: false, healthy: false, message: "unknown GPU" });
      continue;
    }
    try {
      await ports.gpu.reset(uuid);
      reset.push(uuid);
    } catch (e) {
      if (!(e instanceof GpuToolError)) throw e;
      out.set(uuid, { gpu_uuid: uuid, reset: false, healthy: false, message: e.message });
    }
  }
  if (reset.length) {
    const after = await ports.gpu.query();
    for (const uuid of reset) {
      const g = findGpu(after, uuid);
      const why = g ? gpuUnhealthyReason(g) : "not in the inventory after the reset";
      if (why === undefined) ports.conditions.clearXid(uuid);
      out.set(uuid, { gpu_uuid: uuid, reset: true, healthy: why === undefined, message: why ?? "" });
    }
  }
  return { gpus: gpu_uuids.map((u) => out.get(u)!) };
}
