/**
 * The devices section's converger: `observe` reads holds back from the CDI directory, the hold slices, a fresh GPU
 * inventory and the host's memory; `plan` is {@link planDevices} over the wire section; `apply` is
 * {@link applyDevices}. It is a `SectionConverger` of the convergence engine as it stands: register it as is.
 *
 * @module
 */
import type { Logger } from "../../log/mod.ts";
import type { DeviceAssignment, DevicesSection } from "./assignment.ts";
import { boundHoldsCommittedBytes, type HostMemory } from "./admission.ts";
import type { GpuInventory } from "./inventory.ts";
import { applyDevices, type DevicesMemory, type DevicesOutcome } from "./apply.ts";
import type { PassthroughGpu } from "./conflicts.ts";
import { MPS_PIPE_DIRECTORY } from "./env.ts";
import { type DevicesAction, type DevicesObserved, planDevices } from "./plan.ts";
import {
  type EventSink,
  type GpuTool,
  type HoldStore,
  type HostMemorySource,
  NoGpuDriver,
  type SliceManager,
} from "./ports.ts";
import { allocationIdOfSlice } from "./slice.ts";
import { devicesSectionFromWire, type WireDevicesSection } from "./wire.ts";

/** What the devices converger is built from. */
export interface DevicesConvergerOptions {
  readonly gpu: GpuTool;
  readonly holds: HoldStore;
  readonly slices: SliceManager;
  readonly hostMemory: HostMemorySource;
  readonly events: EventSink;
  readonly memory: DevicesMemory;
  /** The MPS pipe directory; `CUDA_MPS_PIPE_DIRECTORY` is set to it for slot holds when it exists. */
  readonly mpsPipeDirectory?: string;
  /** Whether a directory exists (injected so tests run in temp roots). */
  readonly dirExists?: (path: string) => Promise<boolean>;
  /** GPUs the instances converger passes through to running or paused domains (as of its last pass). */
  readonly passthrough?: () => readonly PassthroughGpu[];
  /** Memory the running and paused domains committed (as of the instances converger's last pass). */
  readonly domainCommittedBytes?: () => number;
  /** Allocation ids whose last journaled event is `AllocationBound` (see {@link DevicesObserved.announced}). */
  readonly announced?: () => Promise<ReadonlySet<string>>;
}

/** The context the engine hands `observe` and `apply`. */
export interface DevicesContext {
  readonly generation: number;
  readonly log: Logger;
}

/**
 * Whether `path` is an existing directory. The stat is synchronous: one local stat, asked every pass, where an async
 * one is a round trip through the runtime's blocking pool that costs several times more.
 */
export function dirExists(path: string): Promise<boolean> {
  try {
    return Promise.resolve(Deno.statSync(path).isDirectory);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return Promise.resolve(false);
    return Promise.reject(e);
  }
}

/** Whether an assignment books huge pages (whose faulted usage admission then counts). */
function _booksHugePages(a: DeviceAssignment): boolean {
  return (a.limits?.hugepages_2mi ?? 0) > 0 || (a.limits?.hugepages_1gi ?? 0) > 0;
}

/** The `devices` section converger. */
export class DevicesConverger {
  readonly section = "devices" as const;
  #boundCommitted = 0;
  constructor(private readonly opts: DevicesConvergerOptions) {}

  /**
   * The normal memory the bound holds committed as of the last plan (those held, and those the plan binds), for the
   * instances converger's start admission: VMs and holds never take what the other was promised.
   */
  boundCommittedBytes(): number {
    return this.#boundCommitted;
  }

  #held = 0;
  /** The section the last `observe` mapped, for the `plan` that follows it with the same object (mapped once). */
  #mapped: { readonly from: object; readonly section: DevicesSection } | undefined;

  /** The holds the last pass read from the host (telemetry's `bcd.gpu.holds`). */
  heldCount(): number {
    return this.#held;
  }

  /**
   * Reads the host: holds, slices, inventory, memory, all at once (each a helper request or a tool run on a real
   * host). Throws (retryable) when the holds or slices cannot be read; an unreadable GPU inventory only holds back
   * new holds, so a host without GPUs still converges an empty section.
   *
   * The huge pages a slice faulted in count only for a hold whose assignment books huge pages (admission counts
   * what such a hold booked and has not faulted in yet): given the `desired` section the pass plans, only those
   * slices' usage is read; without it, every hold slice's is.
   */
  async observe(ctx: DevicesContext, desired?: WireDevicesSection | DevicesSection): Promise<DevicesObserved> {
    const o = this.opts;
    const mpsDir = o.mpsPipeDirectory ?? MPS_PIPE_DIRECTORY;
    const [[listing, slices], inv, mem, mps, announced] = await Promise.all([
      Promise.all([o.holds.list(), o.slices.list()]),
      this.#inventory(ctx),
      this.#hostMemory(ctx),
      (o.dirExists ?? dirExists)(mpsDir),
      o.announced?.(),
    ]);
    this.#held = listing.holds.length;
    const section = desired === undefined ? undefined : devicesSectionFromWire(desired);
    const books = section && new Set(section.assignments.filter((a) => _booksHugePages(a)).map((a) => a.allocation_id));
    const usage = await Promise.all(slices.map(async (name) => {
      const id = allocationIdOfSlice(name);
      if (id === undefined || (books && !books.has(id))) return undefined;
      const u = await o.slices.hugetlbUsage(name);
      return u && ([id, u] as const);
    }));
    const hugetlbUsage = new Map<string, { bytes2MB: number; bytes1GB: number }>();
    for (const u of usage) if (u) hugetlbUsage.set(u[0], u[1]);
    this.#mapped = section && { from: desired!, section };
    return {
      listing,
      slices,
      ...inv,
      ...mem,
      hugetlbUsage,
      mpsPipeDirectory: mps ? mpsDir : undefined,
      passthrough: o.passthrough?.() ?? [],
      domainCommittedBytes: o.domainCommittedBytes?.() ?? 0,
      announced,
    };
  }

  /** The GPU inventory, or why it is unreadable; a host without the NVIDIA driver has no GPUs. */
  async #inventory(ctx: DevicesContext): Promise<{ inventory?: GpuInventory; inventoryProblem?: string }> {
    try {
      return { inventory: await this.opts.gpu.query() };
    } catch (e) {
      if (e instanceof NoGpuDriver) {
        // A CPU-only host: no GPUs at all, not an unreadable inventory. An assignment naming one fails
        // device-missing (terminal) instead of waiting for an inventory that will never come.
        ctx.log.debug({ reason: e.reason, err: e.message }, "no NVIDIA driver: no GPUs on this host");
        return { inventory: { gpus: [] } };
      }
      const inventoryProblem = e instanceof Error ? e.message : String(e);
      ctx.log.warn({ err: inventoryProblem }, "GPU inventory unreadable; new holds wait for it");
      return { inventoryProblem };
    }
  }

  /** The host's memory, or why it is unreadable. */
  async #hostMemory(ctx: DevicesContext): Promise<{ host?: HostMemory; hostProblem?: string }> {
    try {
      return { host: await this.opts.hostMemory.read() };
    } catch (e) {
      const hostProblem = e instanceof Error ? e.message : String(e);
      ctx.log.warn({ err: hostProblem }, "host memory unreadable");
      return { hostProblem };
    }
  }

  /**
   * {@link planDevices}. `desired` may be the decoded wire section (the engine hands it over as held) or an
   * already-mapped {@link DevicesSection}; {@link devicesSectionFromWire} maps either.
   */
  plan(desired: WireDevicesSection | DevicesSection | undefined, observed: DevicesObserved): readonly DevicesAction[] {
    const mapped = this.#mapped;
    this.#mapped = undefined;
    const section = desired === undefined
      ? undefined
      : mapped?.from === desired
      ? mapped.section
      : devicesSectionFromWire(desired);
    const actions = planDevices(section, observed);
    const bound = new Set(observed.listing.holds.map((h) => h.allocationId));
    for (const a of actions) if (a.kind === "bind") bound.add(a.assignment.allocation_id);
    for (const a of actions) {
      if (a.kind === "release") bound.delete(a.allocationId);
      if (a.kind === "fail") bound.delete(a.assignment.allocation_id);
    }
    this.#boundCommitted = boundHoldsCommittedBytes(section, bound);
    return actions;
  }

  /** {@link applyDevices}; the outcome is the engine's `ApplyOutcome`. */
  async apply(
    actions: readonly DevicesAction[],
    _desired: DevicesSection | undefined,
    ctx: DevicesContext,
  ): Promise<DevicesOutcome> {
    const o = this.opts;
    const r = await applyDevices(actions, { holds: o.holds, slices: o.slices, events: o.events, log: ctx.log }, {
      generation: ctx.generation,
      memory: o.memory,
    });
    return r.outcome;
  }
}
