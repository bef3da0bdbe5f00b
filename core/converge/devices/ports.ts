/**
 * The host I/O the devices converger and the GPU kinds reach through. Runtimes implement these
 * (`runtimes/cdi`, `runtimes/cgroup`, `runtimes/nvidia`); tests use fakes.
 *
 * @module
 */
import type { DeviceEvent } from "./events.ts";
import type { HoldRecord, ObservedHold, UnreadableHold } from "./hold.ts";
import type { GpuInventory } from "./inventory.ts";
import type { HostMemory } from "./admission.ts";
import type { SliceSettings } from "./slice.ts";

/** What the CDI directory and the allocations env directory hold. */
export interface HoldListing {
  readonly holds: readonly ObservedHold[];
  readonly unreadable: readonly UnreadableHold[];
  /** Allocation ids that have an env file. */
  readonly envFiles: readonly string[];
}

/** The CDI spec `/etc/cdi/bcd-<allocation id>.json` and env file `/run/bcd/allocations/<allocation id>.env`. */
export interface HoldStore {
  /** Reads every hold back from the CDI directory. */
  list(): Promise<HoldListing>;
  /** Writes the env file, then the CDI spec, each atomically (temp file, fsync, rename). */
  write(record: HoldRecord): Promise<void>;
  /** Removes the CDI spec, then the env file; absent files are not an error. */
  remove(allocationId: string): Promise<void>;
  /** Removes an env file alone (left by a write that stopped before its spec). */
  removeEnv(allocationId: string): Promise<void>;
}

/** What {@link SliceManager.remove} did. */
export type SliceRemoval = "removed" | "busy" | "absent";

/** The holds' cgroup-v2 slices. */
export interface SliceManager {
  /** Creates the slice (and enables controllers on its ancestors) or updates it, then sets `settings`. */
  apply(name: string, settings: SliceSettings): Promise<void>;
  /** The hold slices (`bcd-alloc-*.slice`) present on the host. */
  list(): Promise<string[]>;
  /** Stops the slice only when `cgroup.events` says it is empty; `busy` otherwise. */
  remove(name: string): Promise<SliceRemoval>;
  /** Bytes of huge pages the slice has faulted in (`hugetlb.<size>.current`), or `undefined` without a slice. */
  hugetlbUsage(name: string): Promise<{ readonly bytes2MB: number; readonly bytes1GB: number } | undefined>;
}

/** Reads the host's memory (`/proc/meminfo` and the huge page pools); throws when it cannot. */
export interface HostMemorySource {
  read(): Promise<HostMemory>;
}

/** Where allocation events go: the lead wires the node key signer and the journal. */
export interface EventSink {
  /** Signs and journals `event`; resolves once it is durable. */
  emit(event: DeviceEvent): Promise<void>;
}

/**
 * A slice books huge pages of a size this host does not have (the kernel offers no `hugetlb.<size>.max`): no retry
 * fixes it, so a hold that needs the slice fails terminally. `message` names the size.
 */
export class PageSizeUnsupported extends Error {
  override name = "PageSizeUnsupported";
}

/** A `nvidia-smi` call failed; `message` is what it said. */
export class GpuToolError extends Error {
  override name = "GpuToolError";
}

/**
 * The host has no NVIDIA driver (`nvidia-smi` is not there): a CPU-only host, a first-class host with no GPUs. The
 * inventory reports none and says so; every GPU path refuses with {@link NO_GPU_DRIVER}.
 */
export class NoGpuDriver extends GpuToolError {
  override name = "NoGpuDriver";
  readonly reason = NO_GPU_DRIVER;
}

/** The reason GPU paths refuse on a host without an NVIDIA driver (bcd's own; the seed names none). */
export const NO_GPU_DRIVER = "no-gpu-driver";

/** The GPU tool: `nvidia-smi` on a host, a file-backed fake in the sim role. */
export interface GpuTool {
  /** A fresh inventory. */
  query(): Promise<GpuInventory>;
  /** `nvidia-smi --gpu-reset -i <uuid>`; throws {@link GpuToolError} with the tool's message on failure. */
  reset(gpuUuid: string): Promise<void>;
}

/** The XID conditions a healthy reset clears. */
export interface XidConditions {
  clearXid(gpuUuid: string): void;
}
