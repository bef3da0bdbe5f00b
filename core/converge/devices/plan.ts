/**
 * `planDevices(desired, observed)`: the pure half of the devices converger. It decides, for every assignment and
 * every hold read back from the CDI directory, what the pass does; {@link ./apply.ts} carries it out.
 *
 * Rules (000 §Device assignments): holds already bound keep their devices and are never dropped by bcd itself (not
 * when a GPU vanishes from the inventory either); a new or changed assignment is checked in this order: binding
 * (`unsupported-binding`), allocation id, device classes (`unsupported-device`), resolution against the inventory
 * (`device-missing`), parent-aware conflicts with the other holds and passed-through GPUs (`overlap`), host admission
 * (`resources-exhausted`); removed assignments are released; a held hold's missing slice is created again; hold
 * slices whose hold is neither wanted nor released in this pass are tried again.
 *
 * @module
 */
import {
  type DeviceAssignment,
  type DevicesSection,
  hasSliceLimits,
  holdBinding,
  isValidAllocationId,
  isValidCpuList,
} from "./assignment.ts";
import { admitHold, type BoundCommitment, type HostMemory, missingHugePageSize, needsAdmission } from "./admission.ts";
import { parseAtom, type ResolvedDevice, resolveDevice } from "./classes.ts";
import { type Claim, conflictingClaim, describeConflict, type PassthroughGpu, selfConflict } from "./conflicts.ts";
import { holdEnv } from "./env.ts";
import { holdCdiNames, type HoldRecord, type ObservedHold, sameHold } from "./hold.ts";
import type { GpuInventory } from "./inventory.ts";
import type { HoldListing } from "./ports.ts";
import { type AllocationFailureReason, AllocationRefused } from "./reasons.ts";
import { allocationIdOfSlice, sliceName, type SliceSettings, sliceSettings } from "./slice.ts";

/** What a pass observed on the host. */
export interface DevicesObserved {
  readonly listing: HoldListing;
  /** Hold slices present on the host. */
  readonly slices: readonly string[];
  /** The GPU inventory, or `undefined` when the GPU tool failed (new holds then wait; releases still run). */
  readonly inventory?: GpuInventory;
  /** Why the inventory could not be read. */
  readonly inventoryProblem?: string;
  /** The host's memory, or `undefined` when it could not be read (holds then bind without admission). */
  readonly host?: HostMemory;
  /** Why the host's memory could not be read. */
  readonly hostProblem?: string;
  /** Huge pages each bound hold's slice faulted in, by allocation id. */
  readonly hugetlbUsage?: ReadonlyMap<string, { readonly bytes2MB: number; readonly bytes1GB: number }>;
  /** The MPS pipe directory when it exists, else `undefined`. */
  readonly mpsPipeDirectory?: string;
  /** GPUs passed through to VMs. */
  readonly passthrough?: readonly PassthroughGpu[];
  /** Memory the running and paused domains committed (the instances converger's count; 0 until it lands). */
  readonly domainCommittedBytes?: number;
  /**
   * Allocation ids whose last journaled event is `AllocationBound`, when the journal can tell: a bound hold missing
   * from it is announced again, and one in it that is gone is announced released (a crash between the write and the
   * event loses neither). Without it, every event is produced by the action that causes it.
   */
  readonly announced?: ReadonlySet<string>;
}

/** A slice to create or update. */
export interface SliceTarget {
  readonly name: string;
  readonly settings: SliceSettings;
}

/** One thing a pass does. */
export type DevicesAction =
  | { readonly kind: "warn"; readonly message: string }
  | { readonly kind: "remove-unreadable"; readonly allocationId: string; readonly problem: string }
  | {
    readonly kind: "release";
    readonly allocationId: string;
    readonly cdiDevices: readonly string[];
    readonly slice?: string;
  }
  | { readonly kind: "announce-released"; readonly allocationId: string }
  | { readonly kind: "ensure-slice"; readonly allocationId: string; readonly slice: SliceTarget }
  | { readonly kind: "rewrite"; readonly record: HoldRecord }
  | {
    readonly kind: "bind";
    readonly assignment: DeviceAssignment;
    readonly record: HoldRecord;
    readonly slice?: SliceTarget;
    /** An earlier hold of this allocation is replaced (it is not undone when the event fails). */
    readonly replaces: boolean;
    /** Whether the bind produces `AllocationBound` (not for a rewrite that keeps the same devices). */
    readonly announce: boolean;
  }
  | { readonly kind: "announce-bound"; readonly assignment: DeviceAssignment; readonly hold: ObservedHold }
  | {
    readonly kind: "fail";
    readonly assignment: DeviceAssignment;
    readonly reason: AllocationFailureReason;
    readonly message: string;
  }
  /** A new hold that cannot be decided this pass (the GPU inventory is unreadable): retryable. */
  | { readonly kind: "retry"; readonly allocationId: string; readonly message: string }
  | { readonly kind: "remove-env"; readonly allocationId: string }
  | { readonly kind: "remove-slice"; readonly name: string };

/** The inventory is unreadable this pass: not the assignment's fault, so retried rather than failed. */
class _InventoryUnreadable extends Error {
  override name = "InventoryUnreadable";
}

interface _Rendered {
  readonly record: HoldRecord;
  readonly claims: Claim[];
  readonly slice?: SliceTarget;
}

/** Renders what an assignment's hold would be, or throws {@link AllocationRefused} (no conflict check here). */
function _render(a: DeviceAssignment, o: DevicesObserved): _Rendered {
  const binding = holdBinding(a.binding);
  if (!binding) throw new AllocationRefused("unsupported-binding", `binding ${a.binding} is not supported`);
  if (!isValidAllocationId(a.allocation_id)) {
    throw new AllocationRefused("invalid-assignment", `allocation id ${JSON.stringify(a.allocation_id)} is not usable`);
  }
  if (a.devices.length === 0) throw new AllocationRefused("device-missing", "the assignment names no device");
  a.devices.forEach(parseAtom); // unsupported-device before anything needs the inventory
  const inv = o.inventory;
  if (!inv) throw new _InventoryUnreadable(o.inventoryProblem ?? "the GPU inventory could not be read");
  const resolved: ResolvedDevice[] = a.devices.map((d) => resolveDevice(d, inv));
  for (const field of ["cpus", "mems"] as const) {
    const v = a.limits?.[field];
    if (v && !isValidCpuList(v)) {
      throw new AllocationRefused("invalid-assignment", `limits.${field} ${JSON.stringify(v)} is not a cpulist`);
    }
  }
  const slice = binding === "hold" && hasSliceLimits(a.limits)
    ? { name: sliceName(a.allocation_id), settings: sliceSettings(a.limits!) }
    : undefined;
  const env = holdEnv({
    allocationId: a.allocation_id,
    binding,
    devices: resolved,
    extra: a.env,
    cgroupParent: slice?.name,
    mpsPipeDirectory: o.mpsPipeDirectory,
  });
  const record: HoldRecord = {
    allocationId: a.allocation_id,
    binding,
    devices: resolved.map((d) => ({
      class: d.class,
      atom: d.atom,
      gpuUuid: d.gpuUuid,
      cdiName: d.cdiName,
      minorNumber: d.minorNumber,
    })),
    env,
    ...(slice ? { cgroupParent: slice.name } : {}),
  };
  const claims = resolved.map((d) => ({
    allocationId: a.allocation_id,
    class: d.class,
    atom: d.atom,
    gpuUuid: d.gpuUuid,
  }));
  return { record, claims, slice };
}

function _claimsOf(h: ObservedHold): Claim[] {
  return h.devices.map((d) => ({ allocationId: h.allocationId, class: d.class, atom: d.atom, gpuUuid: d.gpuUuid }));
}

function _commitment(a: DeviceAssignment, o: DevicesObserved): BoundCommitment {
  const u = o.hugetlbUsage?.get(a.allocation_id);
  return {
    allocationId: a.allocation_id,
    limits: a.limits ?? {},
    faulted2MBBytes: u?.bytes2MB,
    faulted1GBBytes: u?.bytes1GB,
  };
}

/** Plans one pass of the devices section. Pure: the same inputs give the same actions. */
export function planDevices(desired: DevicesSection | undefined, o: DevicesObserved): DevicesAction[] {
  const actions: DevicesAction[] = [];
  const assignments = desired?.assignments ?? [];
  const wanted = new Map<string, DeviceAssignment>();
  const duplicates: DeviceAssignment[] = [];
  for (const a of assignments) {
    if (wanted.has(a.allocation_id)) duplicates.push(a);
    else wanted.set(a.allocation_id, a);
  }
  const observed = new Map(o.listing.holds.map((h) => [h.allocationId, h]));
  const unreadable = new Map(o.listing.unreadable.map((u) => [u.allocationId, u]));
  const slicesPresent = new Set(o.slices);
  const envFiles = new Set(o.listing.envFiles);

  // Releases first: what they held is free for this pass's binds.
  const released = new Set<string>();
  for (const u of o.listing.unreadable) {
    if (!wanted.has(u.allocationId)) {
      actions.push({ kind: "remove-unreadable", allocationId: u.allocationId, problem: u.problem });
    }
  }
  for (const h of o.listing.holds) {
    if (wanted.has(h.allocationId)) continue;
    const name = sliceName(h.allocationId);
    const slice = h.cgroupParent ?? (slicesPresent.has(name) ? name : undefined);
    actions.push({ kind: "release", allocationId: h.allocationId, cdiDevices: holdCdiNames(h.devices), slice });
    released.add(h.allocationId);
  }
  for (const id of o.announced ?? []) {
    if (!observed.has(id) && !wanted.has(id) && !unreadable.has(id)) {
      actions.push({ kind: "announce-released", allocationId: id });
    }
  }

  // Holds already bound keep their atoms and their commitments.
  const claims: Claim[] = [];
  const bound: BoundCommitment[] = [];
  const kept = new Map<string, { a: DeviceAssignment; h: ObservedHold; r?: _Rendered }>();
  for (const a of wanted.values()) {
    const h = observed.get(a.allocation_id);
    if (!h) continue;
    let r: _Rendered | undefined;
    try {
      r = _render(a, o);
    } catch (e) {
      if (!(e instanceof AllocationRefused || e instanceof _InventoryUnreadable)) throw e;
      r = undefined; // cannot re-render (its GPU left the inventory, or none was read): the hold stays as it is
    }
    kept.set(a.allocation_id, { a, h, r });
    claims.push(..._claimsOf(h));
    bound.push(_commitment(a, o));
  }

  const withSlice = new Set<string>();
  const pending: { a: DeviceAssignment; replaces?: ObservedHold }[] = [];
  for (const { a, h, r } of kept.values()) {
    if (r && !sameHold(h, r.record)) {
      const sameDevices = h.devices.length === r.record.devices.length &&
        h.devices.every((d, i) => d.atom === r.record.devices[i]!.atom);
      if (sameDevices) {
        if (r.slice) withSlice.add(r.slice.name);
        if (r.slice && !slicesPresent.has(r.slice.name)) {
          actions.push({ kind: "ensure-slice", allocationId: a.allocation_id, slice: r.slice });
        }
        actions.push({ kind: "rewrite", record: r.record });
        if (o.announced && !o.announced.has(a.allocation_id)) {
          const { cgroupParent: _was, ...rest } = h;
          const hold = {
            ...rest,
            devices: r.record.devices,
            ...(r.record.cgroupParent ? { cgroupParent: r.record.cgroupParent } : {}),
          };
          actions.push({ kind: "announce-bound", assignment: a, hold });
        }
        continue;
      }
      pending.push({ a, replaces: h });
      continue;
    }
    if (h.cgroupParent) {
      withSlice.add(h.cgroupParent);
      if (!slicesPresent.has(h.cgroupParent) && h.binding === "hold" && hasSliceLimits(a.limits)) {
        const slice = { name: h.cgroupParent, settings: sliceSettings(a.limits!) };
        actions.push({ kind: "ensure-slice", allocationId: a.allocation_id, slice });
      }
    }
    if (!envFiles.has(a.allocation_id) && r) actions.push({ kind: "rewrite", record: r.record });
    if (o.announced && !o.announced.has(a.allocation_id)) {
      actions.push({ kind: "announce-bound", assignment: a, hold: h });
    }
  }
  for (const a of wanted.values()) if (!observed.has(a.allocation_id)) pending.push({ a });

  let warned = false;
  const bindsNow = new Set<string>();
  for (const { a, replaces } of pending) {
    try {
      const r = _render(a, o);
      const others = replaces ? claims.filter((c) => c.allocationId !== a.allocation_id) : claims;
      const self = selfConflict(r.claims);
      if (self) throw new AllocationRefused("overlap", describeConflict(self[0], self[1]));
      for (const c of r.claims) {
        const h = conflictingClaim(c, others);
        if (h) throw new AllocationRefused("overlap", describeConflict(c, h));
        const pt = (o.passthrough ?? []).find((p) => p.gpuUuid === c.gpuUuid);
        if (pt) throw new AllocationRefused("overlap", `GPU ${c.gpuUuid} is passed through to instance ${pt.instance}`);
      }
      const noSuchPages = o.host ? missingHugePageSize(a.limits, o.host) : undefined;
      if (noSuchPages) throw new AllocationRefused("resources-exhausted", noSuchPages);
      if (needsAdmission(a.limits)) {
        if (!o.host) {
          if (!warned) {
            actions.push({
              kind: "warn",
              message: `host memory unreadable (${o.hostProblem ?? "unknown"}): holds bind without admission`,
            });
            warned = true;
          }
        } else {
          const others = replaces ? bound.filter((b) => b.allocationId !== a.allocation_id) : bound;
          const adm = admitHold(a.limits!, o.host, others, o.domainCommittedBytes ?? 0);
          if (!adm.ok) throw new AllocationRefused("resources-exhausted", adm.message);
        }
      }
      if (replaces) {
        for (let i = claims.length - 1; i >= 0; i--) {
          if (claims[i]!.allocationId === a.allocation_id) claims.splice(i, 1);
        }
        for (let i = bound.length - 1; i >= 0; i--) if (bound[i]!.allocationId === a.allocation_id) bound.splice(i, 1);
      }
      claims.push(...r.claims);
      bound.push(_commitment(a, o));
      if (r.slice) withSlice.add(r.slice.name);
      bindsNow.add(a.allocation_id);
      actions.push({
        kind: "bind",
        assignment: a,
        record: r.record,
        slice: r.slice,
        replaces: !!replaces,
        announce: true,
      });
    } catch (e) {
      if (e instanceof _InventoryUnreadable) {
        actions.push({
          kind: "retry",
          allocationId: a.allocation_id,
          message: `GPU inventory unreadable: ${e.message}`,
        });
        continue;
      }
      if (!(e instanceof AllocationRefused)) throw e;
      actions.push({ kind: "fail", assignment: a, reason: e.reason, message: e.message });
    }
  }
  for (const a of duplicates) {
    actions.push({
      kind: "fail",
      assignment: a,
      reason: "invalid-assignment",
      message: `allocation ${a.allocation_id} is assigned twice`,
    });
  }

  for (const id of o.listing.envFiles) {
    if (!observed.has(id) && !bindsNow.has(id) && !unreadable.has(id)) {
      actions.push({ kind: "remove-env", allocationId: id });
    }
  }
  for (const name of o.slices) {
    const id = allocationIdOfSlice(name);
    if (id === undefined || withSlice.has(name) || released.has(id)) continue;
    actions.push({ kind: "remove-slice", name });
  }
  return actions;
}
