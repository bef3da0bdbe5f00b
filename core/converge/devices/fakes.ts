/**
 * In-memory implementations of the devices ports, for tests and for wiring a role without host I/O. Each can be
 * told to fail its next call of an operation.
 *
 * @module
 */
import type { HostMemory } from "./admission.ts";
import { classOfAtom } from "./classes.ts";
import type { DeviceEvent } from "./events.ts";
import type { HoldRecord, ObservedHold, UnreadableHold } from "./hold.ts";
import type { GpuInventory } from "./inventory.ts";
import {
  type EventSink,
  type GpuTool,
  GpuToolError,
  type HoldListing,
  type HoldStore,
  type HostMemorySource,
  type SliceManager,
  type SliceRemoval,
} from "./ports.ts";
import type { SliceSettings } from "./slice.ts";

class _Faults {
  readonly #next = new Map<string, Error>();
  /** The next call of `op` throws `err`. */
  failNext(op: string, err: Error = new Error(`injected failure of ${op}`)): void {
    this.#next.set(op, err);
  }
  protected fault(op: string): void {
    const e = this.#next.get(op);
    if (e) {
      this.#next.delete(op);
      throw e;
    }
  }
}

/** Holds as an in-memory map. */
export class MemoryHoldStore extends _Faults implements HoldStore {
  readonly specs = new Map<string, HoldRecord>();
  readonly envs = new Map<string, string[]>();
  readonly unreadable: UnreadableHold[] = [];
  list(): Promise<HoldListing> {
    this.fault("list");
    const holds: ObservedHold[] = [...this.specs.values()].map((r) => ({
      allocationId: r.allocationId,
      binding: r.binding,
      devices: r.devices.map((d) => ({ class: classOfAtom(d.atom)!, atom: d.atom, gpuUuid: d.gpuUuid })),
      env: [...r.env],
      ...(r.cgroupParent ? { cgroupParent: r.cgroupParent } : {}),
    }));
    return Promise.resolve({ holds, unreadable: [...this.unreadable], envFiles: [...this.envs.keys()] });
  }
  write(r: HoldRecord): Promise<void> {
    this.fault("write");
    this.envs.set(r.allocationId, [...r.env]);
    this.specs.set(r.allocationId, r);
    const i = this.unreadable.findIndex((u) => u.allocationId === r.allocationId);
    if (i >= 0) this.unreadable.splice(i, 1);
    return Promise.resolve();
  }
  remove(id: string): Promise<void> {
    this.fault("remove");
    this.specs.delete(id);
    this.envs.delete(id);
    const i = this.unreadable.findIndex((u) => u.allocationId === id);
    if (i >= 0) this.unreadable.splice(i, 1);
    return Promise.resolve();
  }
  removeEnv(id: string): Promise<void> {
    this.fault("removeEnv");
    this.envs.delete(id);
    return Promise.resolve();
  }
}

/** Slices as an in-memory map; `populated` marks one that still has a workload. */
export class MemorySliceManager extends _Faults implements SliceManager {
  readonly slices = new Map<
    string,
    { settings: SliceSettings; populated: boolean; hugetlb2MB: number; hugetlb1GB: number }
  >();
  apply(name: string, settings: SliceSettings): Promise<void> {
    this.fault("apply");
    const s = this.slices.get(name);
    this.slices.set(name, { settings, populated: s?.populated ?? false, hugetlb2MB: 0, hugetlb1GB: 0 });
    return Promise.resolve();
  }
  list(): Promise<string[]> {
    this.fault("list");
    return Promise.resolve([...this.slices.keys()]);
  }
  remove(name: string): Promise<SliceRemoval> {
    this.fault("remove");
    const s = this.slices.get(name);
    if (!s) return Promise.resolve("absent");
    if (s.populated) return Promise.resolve("busy");
    this.slices.delete(name);
    return Promise.resolve("removed");
  }
  hugetlbUsage(name: string): Promise<{ bytes2MB: number; bytes1GB: number } | undefined> {
    const s = this.slices.get(name);
    return Promise.resolve(s ? { bytes2MB: s.hugetlb2MB, bytes1GB: s.hugetlb1GB } : undefined);
  }
}

/** Events in an array. */
export class MemoryEventSink extends _Faults implements EventSink {
  readonly events: DeviceEvent[] = [];
  emit(e: DeviceEvent): Promise<void> {
    this.fault("emit");
    this.events.push(e);
    return Promise.resolve();
  }
}

/** A fixed host memory, or one that cannot be read (`undefined`). */
export class StaticHostMemory implements HostMemorySource {
  constructor(public value: HostMemory | undefined) {}
  read(): Promise<HostMemory> {
    if (!this.value) return Promise.reject(new Error("meminfo unreadable"));
    return Promise.resolve(this.value);
  }
}

/** A GPU tool over an inventory held in memory; `after` changes it when a GPU resets. */
export class StaticGpuTool implements GpuTool {
  readonly resets: string[] = [];
  readonly failReset = new Map<string, string>();
  constructor(
    public inventory: GpuInventory,
    private readonly after?: (uuid: string, inv: GpuInventory) => GpuInventory,
  ) {}
  query(): Promise<GpuInventory> {
    return Promise.resolve(this.inventory);
  }
  reset(uuid: string): Promise<void> {
    this.resets.push(uuid);
    const msg = this.failReset.get(uuid);
    if (msg) return Promise.reject(new GpuToolError(msg));
    if (this.after) this.inventory = this.after(uuid, this.inventory);
    return Promise.resolve();
  }
}
