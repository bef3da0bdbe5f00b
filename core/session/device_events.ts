/**
 * The devices converger's events as the session carries them: each allocation event becomes a `ReportBody`, signed
 * by the node key as an `AttestedReport` (purpose `attested-report`), journaled as a `transition` event (never
 * dropped for space) before it is sent. `AllocationBound` and `AllocationReleased` also record, in the transaction
 * that journals them, whether the allocation stands announced bound (`Journal.announcedAllocations`): the
 * devices converger's `announced`, so a crash between a hold's write and its event loses neither event.
 *
 * @module
 */
import type { DeviceEvent, EventSink as DeviceEventSink } from "../converge/devices/mod.ts";
import { attestReport } from "../pki/attested_report.ts";
import type { EventSink } from "./node_agent.ts";

/** A devices `EventSink` over the agent's event journal, signing with `nodeKey` for node `nodeId`. */
export function deviceEventSink(events: EventSink, nodeId: string, nodeKey: CryptoKey): DeviceEventSink {
  return {
    async emit(e: DeviceEvent): Promise<void> {
      const base = { node_id: nodeId, generation: e.generation };
      const report = e.type === "AllocationBound"
        ? {
          ...base,
          allocation_bound: {
            allocation_id: e.allocation_id,
            cdi_devices: [...e.cdi_devices],
            devices: e.devices.map((d) => ({ class: d.class, id: d.id })),
            cgroup_parent: e.cgroup_parent,
          },
        }
        : e.type === "AllocationReleased"
        ? { ...base, allocation_released: { allocation_id: e.allocation_id } }
        : { ...base, allocation_failed: { allocation_id: e.allocation_id, reason: e.reason, message: e.message } };
      const attested = await attestReport(nodeKey, report);
      const announce = e.type === "AllocationFailed" ? undefined : {
        allocationId: e.allocation_id,
        bound: e.type === "AllocationBound",
      };
      await events.emit("transition", { type: e.type, attested_report: attested }, announce);
    },
  };
}
