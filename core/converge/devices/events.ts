/**
 * The allocation events the devices converger produces. The lead's `EventSink` signs them with the node key
 * (`AllocationBound`, `AllocationReleased` are attested) and journals them before they go out.
 *
 * @module
 */
import type { AllocationFailureReason } from "./reasons.ts";

/** A hold was bound: its CDI names, `bcd.dev/gpu=<name>`. */
export interface AllocationBound {
  readonly type: "AllocationBound";
  readonly allocation_id: string;
  readonly reservation_id: string;
  readonly generation: number;
  readonly cdi_devices: readonly string[];
  /** The assignment's devices, as `{class, id}`. */
  readonly devices: readonly { readonly class: string; readonly id: string }[];
  /** The slice, `bcd-alloc-<allocation id>.slice`; empty for a hold without limits or a Kubernetes hold. */
  readonly cgroup_parent: string;
}

/** A hold was released (its spec and env file are gone). */
export interface AllocationReleased {
  readonly type: "AllocationReleased";
  readonly allocation_id: string;
  readonly generation: number;
  readonly cdi_devices: readonly string[];
}

/** An assignment bcd cannot honour. */
export interface AllocationFailed {
  readonly type: "AllocationFailed";
  readonly allocation_id: string;
  readonly reservation_id: string;
  readonly generation: number;
  readonly reason: AllocationFailureReason;
  readonly message: string;
}

/** Every allocation event. */
export type DeviceEvent = AllocationBound | AllocationReleased | AllocationFailed;
