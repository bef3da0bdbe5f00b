/**
 * `applyDevices`: carries out a devices plan through the hold store, the slice manager and the event sink, and
 * says how the section stands. A rule failure (`fail`) is terminal at this generation; an I/O failure of any action
 * is retryable, so the section stays `PROGRESSING` and the next pass tries again.
 *
 * @module
 */
import type { Logger } from "../../log/mod.ts";
import type { DeviceEvent } from "./events.ts";
import { holdCdiNames } from "./hold.ts";
import type { DevicesAction } from "./plan.ts";
import { type EventSink, type HoldStore, PageSizeUnsupported, type SliceManager } from "./ports.ts";
import type { DeviceAssignment } from "./assignment.ts";
import type { AllocationFailureReason } from "./reasons.ts";

/** The ports `applyDevices` acts through. */
export interface DevicesApplyPorts {
  readonly holds: HoldStore;
  readonly slices: SliceManager;
  readonly events: EventSink;
  readonly log: Logger;
}

/**
 * What the converger remembers between passes: the failures it already reported, so a pass at the same generation
 * does not journal the same `AllocationFailed` again.
 */
export class DevicesMemory {
  readonly #reported = new Set<string>();
  /** True the first time a failure is seen at a generation. */
  firstReport(generation: number, allocationId: string, reason: string): boolean {
    const k = `${generation}\u0000${allocationId}\u0000${reason}`;
    if (this.#reported.has(k)) return false;
    for (const old of this.#reported) if (Number(old.split("\u0000")[0]) < generation) this.#reported.delete(old);
    this.#reported.add(k);
    return true;
  }
}

/** How the section stands after a pass (the shape of the convergence engine's `ApplyOutcome`). */
export type DevicesOutcome =
  | { readonly kind: "converged"; readonly message?: string }
  | { readonly kind: "progressing"; readonly reason: string; readonly message: string }
  | { readonly kind: "failed"; readonly reason: string; readonly message: string };

/** The result of {@link applyDevices}. */
export interface DevicesApplyResult {
  readonly outcome: DevicesOutcome;
  /** Events emitted this pass, in order. */
  readonly events: readonly DeviceEvent[];
  /** Slices kept because their workload still runs. */
  readonly busySlices: readonly string[];
}

/** Carries out `actions` in order. Never throws for an action's failure; it becomes a retryable outcome. */
export async function applyDevices(
  actions: readonly DevicesAction[],
  ports: DevicesApplyPorts,
  ctx: { readonly generation: number; readonly memory?: DevicesMemory },
): Promise<DevicesApplyResult> {
  const { holds, slices, log } = ports;
  const events: DeviceEvent[] = [];
  const busy: string[] = [];
  const retry: string[] = [];
  const failures: { reason: string; text: string }[] = [];
  const emit = async (e: DeviceEvent) => {
    await ports.events.emit(e);
    events.push(e);
  };
  /** A terminal failure of a hold: `AllocationFailed` once per allocation, reason and generation. */
  const fail = async (assignment: DeviceAssignment, reason: AllocationFailureReason, message: string) => {
    failures.push({ reason, text: `${assignment.allocation_id}: ${reason}: ${message}` });
    if (ctx.memory && !ctx.memory.firstReport(ctx.generation, assignment.allocation_id, reason)) return;
    await emit({
      type: "AllocationFailed",
      allocation_id: assignment.allocation_id,
      reservation_id: assignment.reservation_id,
      generation: ctx.generation,
      reason,
      message,
    });
    log.warn({ allocation: assignment.allocation_id, reason, generation: ctx.generation }, message);
  };
  const dropSlice = async (name: string, allocationId?: string) => {
    const r = await slices.remove(name);
    if (r === "busy") {
      busy.push(name);
      log.info({ slice: name, allocation: allocationId }, "hold slice still has a workload; kept until it is empty");
    }
  };

  for (const a of actions) {
    const id = _allocationOf(a);
    try {
      switch (a.kind) {
        case "warn":
          log.warn(a.message);
          break;
        case "remove-unreadable":
          log.warn({ allocation: a.allocationId, problem: a.problem }, "removing an unreadable hold spec");
          await holds.remove(a.allocationId);
          break;
        case "release":
          await holds.remove(a.allocationId);
          await emit({
            type: "AllocationReleased",
            allocation_id: a.allocationId,
            generation: ctx.generation,
            cdi_devices: a.cdiDevices,
          });
          if (a.slice) await dropSlice(a.slice, a.allocationId);
          break;
        case "announce-released":
          await emit({
            type: "AllocationReleased",
            allocation_id: a.allocationId,
            generation: ctx.generation,
            cdi_devices: [],
          });
          break;
        case "ensure-slice":
          log.info({ allocation: a.allocationId, slice: a.slice.name }, "hold slice missing; creating it again");
          await slices.apply(a.slice.name, a.slice.settings);
          break;
        case "rewrite":
          await holds.write(a.record);
          break;
        case "bind": {
          if (a.slice) {
            try {
              await slices.apply(a.slice.name, a.slice.settings);
            } catch (e) {
              if (!(e instanceof PageSizeUnsupported)) throw e;
              // The host lacks a page size the hold books (found by the kernel, the host's sizes being unknown to
              // the plan): as terminal as the plan's refusal. A new hold's slice goes; a bound hold keeps its own.
              if (!a.replaces) await dropSlice(a.slice.name, a.assignment.allocation_id);
              await fail(a.assignment, "resources-exhausted", e.message);
              break;
            }
          }
          await holds.write(a.record);
          if (!a.announce) break;
          try {
            await emit({
              type: "AllocationBound",
              allocation_id: a.assignment.allocation_id,
              reservation_id: a.assignment.reservation_id,
              generation: ctx.generation,
              cdi_devices: holdCdiNames(a.record.devices),
              devices: a.record.devices.map((d) => ({ class: d.class, id: d.atom })),
              cgroup_parent: a.record.cgroupParent ?? "",
            });
          } catch (e) {
            if (!a.replaces) await holds.remove(a.assignment.allocation_id); // not announced: not held
            throw e;
          }
          log.info({ allocation: a.assignment.allocation_id, generation: ctx.generation }, "hold bound");
          break;
        }
        case "announce-bound":
          await emit({
            type: "AllocationBound",
            allocation_id: a.assignment.allocation_id,
            reservation_id: a.assignment.reservation_id,
            generation: ctx.generation,
            cdi_devices: holdCdiNames(a.hold.devices),
            devices: a.hold.devices.map((d) => ({ class: d.class, id: d.atom })),
            cgroup_parent: a.hold.cgroupParent ?? "",
          });
          break;
        case "fail":
          await fail(a.assignment, a.reason, a.message);
          break;
        case "retry":
          retry.push(`${a.allocationId}: ${a.message}`);
          break;
        case "remove-env":
          await holds.removeEnv(a.allocationId);
          break;
        case "remove-slice":
          await dropSlice(a.name);
          break;
      }
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      retry.push(`${a.kind}${id ? ` ${id}` : ""}: ${msg}`);
      log.warn({ allocation: id, action: a.kind, err: msg }, "devices action failed; retried next pass");
    }
  }

  let outcome: DevicesOutcome;
  if (retry.length) {
    // A retryable failure keeps the section PROGRESSING even beside a rule failure, so the next pass runs.
    outcome = {
      kind: "progressing",
      reason: "ActionFailed",
      message: [...retry, ...failures.map((f) => f.text)].join("; "),
    };
  } else if (failures.length) {
    outcome = { kind: "failed", reason: failures[0]!.reason, message: failures.map((f) => f.text).join("; ") };
  } else {
    outcome = { kind: "converged" };
  }
  return { outcome, events, busySlices: busy };
}

function _allocationOf(a: DevicesAction): string | undefined {
  switch (a.kind) {
    case "bind":
    case "announce-bound":
    case "fail":
      return a.assignment.allocation_id;
    case "rewrite":
      return a.record.allocationId;
    case "warn":
    case "remove-slice":
      return undefined;
    default:
      return a.allocationId;
  }
}
