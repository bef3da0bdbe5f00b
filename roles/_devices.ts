/**
 * The devices section's wiring, shared by the node and sim roles: the converger over a GPU tool, a CDI hold store,
 * a slice manager and a host-memory source, with its events signed by the node key; and the GPU kinds
 * (`gpu.reset`, `diag.nvml`) over the same tool and holds.
 *
 * @module
 */
import type { HandlerRegistry } from "../core/commands/handlers.ts";
import type { ConditionSet } from "../core/converge/conditions.ts";
import type { GpuTool, HoldStore, HostMemorySource, SliceManager } from "../core/converge/devices/ports.ts";
import type { PassthroughGpu } from "../core/converge/devices/conflicts.ts";
import { diagNvmlHandler, gpuResetHandler } from "../core/converge/devices/gpu_kind_handlers.ts";
import { xidConditionsOf } from "../core/converge/devices/gpu_reset.ts";
import { xidsFromConditions } from "../core/converge/devices/diag_nvml.ts";
import { type DevicesConvergerView, lazyDevicesConverger } from "../core/converge/devices/lazy.ts";
import type { Journal } from "../core/journal/mod.ts";
import { deviceEventSink } from "../core/session/device_events.ts";
import type { NodeIdentity } from "../core/session/identity.ts";
import type { EventSink } from "../core/session/node_agent.ts";

/** The host ports the devices section runs on. */
export interface DevicePorts {
  readonly gpu: GpuTool;
  readonly holds: HoldStore;
  readonly slices: SliceManager;
  readonly hostMemory: HostMemorySource;
  readonly mpsPipeDirectory?: string;
}

/** What the devices converger takes from a role's wiring context (a part of `WiringContext`). */
export interface DevicesWiring {
  readonly identity: NodeIdentity;
  readonly journal: Journal;
}

/** What the devices side learns from the instances converger (the GPUs it passes through, the memory it committed). */
export interface InstancesView {
  passthrough(): readonly PassthroughGpu[];
  committedBytes(): number;
}

/** The devices converger of a role; its code loads on the section's first pass (`core/converge/devices/lazy.ts`). */
export function devicesConverger(
  ctx: DevicesWiring,
  ports: DevicePorts,
  events: EventSink,
  instances?: InstancesView,
): DevicesConvergerView {
  return lazyDevicesConverger(async () => {
    const [{ DevicesConverger }, { DevicesMemory }] = await Promise.all([
      import("../core/converge/devices/converger.ts"),
      import("../core/converge/devices/apply.ts"),
    ]);
    return new DevicesConverger({
      ...ports,
      ...(instances
        ? { passthrough: () => instances.passthrough(), domainCommittedBytes: () => instances.committedBytes() }
        : {}),
      events: deviceEventSink(events, ctx.identity.nodeId, ctx.identity.key.privateKey),
      memory: new DevicesMemory(),
      // What the journal says was announced: a hold written but not announced (a crash between the two) is announced
      // again, and one announced but gone is announced released.
      announced: () => ctx.journal.announcedAllocations(),
    });
  });
}

/** Registers `gpu.reset` and `diag.nvml`; `conditions` is the agent's set once it exists. */
export function registerGpuKinds(
  reg: HandlerRegistry,
  ports: DevicePorts,
  conditions: () => ConditionSet | undefined,
  passthrough: () => readonly PassthroughGpu[] = () => [],
): HandlerRegistry {
  const lazy = {
    clearType: (type: string, subject?: string) => conditions()?.clearType(type, subject),
    report: () => conditions()?.report() ?? [],
  };
  return reg
    .register(gpuResetHandler({
      gpu: ports.gpu,
      holds: () => ports.holds.list(),
      passthrough,
      conditions: xidConditionsOf(lazy),
    }))
    .register(diagNvmlHandler({ gpu: ports.gpu, xids: xidsFromConditions(lazy) }));
}
