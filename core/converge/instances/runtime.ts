/**
 * The instance runtime port: what the `instances` converger needs from a VM runtime (libvirt, cloud-hypervisor, or
 * the sim's file-backed runtime). A runtime reports every domain it holds; only those carrying bcd's ownership mark
 * are managed, and an unmanaged domain is listed, never defined over, stopped or removed.
 *
 * @module
 */

import type { ImageFormat } from "../../images/qcow2_header.ts";
import type { DomainState, HugePageSize, PlanGpu, PlanNic, PlanPlacement } from "./domain_plan.ts";
import type { SnapshotSource } from "./snapshot_source.ts";
import type { VolumeAttachment } from "../../volumes/grammar.ts";
import type { BalloonReading } from "../../balloon/port.ts";

export type { DomainState };

/** What bcd records when it defines a domain (the runtime's ownership mark). */
export interface DomainRecord {
  readonly id: string;
  readonly allocationId: string;
  readonly vcpus: number;
  readonly memoryBytes: number;
  readonly imageSha256: string;
  readonly gpus: readonly string[];
  /** The huge page size the domain's memory is on (`none` when absent), for host admission. */
  readonly hugepages?: HugePageSize;
  /** The volumes attached, in order (`vdb` onward); absent or empty for none (000 §Persistent volumes). */
  readonly volumes?: readonly VolumeAttachment[];
  /** What a real hypervisor needs to build the domain (the sim's runtime ignores it and never stores it). */
  readonly launch?: LaunchSpec;
}

/** The parts of `InstanceSpec` a hypervisor runtime builds a domain from. */
export interface LaunchSpec {
  /** The base image; `null` for a disk restored from a snapshot. */
  readonly image: { readonly url: string; readonly sha256: string; readonly format: ImageFormat } | null;
  /** The root disk's size; 0 keeps the base image's virtual size. */
  readonly diskBytes: number;
  readonly nics: readonly PlanNic[];
  readonly gpus: readonly PlanGpu[];
  readonly placement: PlanPlacement | null;
  readonly hostname: string;
  /** The user data fetched for the instance (never in the spec); `null` for none. */
  readonly userData: Uint8Array | null;
  /** The snapshot to boot from instead of the image (downloaded and verified before the define); absent for none. */
  readonly restoreFrom?: SnapshotSource;
  /** tcp/22 only from the host (`InstanceSpec.ssh_from_host_only`), for a runtime plugin's spec. */
  readonly sshFromHostOnly?: boolean;
  /** The rebind bundle's reference (`InstanceSpec.identity_rebind_ref`), for a runtime plugin's spec; "" for none. */
  readonly identityRebindRef?: string;
  /** Whether bcd's network rules guard the instance (a network policy, or ssh from the host only): the tap rule. */
  readonly guarded?: boolean;
}

/** A domain as the runtime lists it. */
export interface Domain {
  readonly id: string;
  readonly state: DomainState;
  /** Present only for domains bcd defined. */
  readonly record: DomainRecord | undefined;
}

/** A runtime refusal that no retry fixes (bad image, unknown runtime, a capacity failure). */
export class RuntimeRefused extends Error {
  override name = "RuntimeRefused";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * A hot-unplug the hypervisor accepted but the guest has not acknowledged yet (`detach-pending`): the device stays
 * attached and open, and the runtime keeps it in its record (so the volume's one-writer hold stays) until the guest
 * lets it go. Not a failure of the instance: the converger retries it next pass.
 */
export class DetachPending extends Error {
  override name = "DetachPending";
  readonly reason = "detach-pending";
}

/** One VM runtime. */
export interface InstanceRuntime {
  /** The runtime's name as `InstanceSpec.runtime` spells it (`libvirt-kvm`, `cloud-hypervisor`, `sim`). */
  readonly name: string;
  list(): Promise<Domain[]>;
  define(record: DomainRecord): Promise<void>;
  start(id: string, paused: boolean): Promise<void>;
  pause(id: string): Promise<void>;
  resume(id: string): Promise<void>;
  stop(id: string): Promise<void>;
  /** Stops (when needed) and removes a managed domain and its files. */
  delete(id: string): Promise<void>;
  /**
   * Grows the domain's root disk to `bytes` (stopped or running); the same size is nothing to do, a smaller one is a
   * {@link RuntimeRefused} `disk-shrink`. A runtime without it cannot grow disks (the instance fails).
   */
  grow?(id: string, bytes: number): Promise<void>;
  /**
   * Brings the domain's attached volumes to `volumes` (in order, `vdb` onward): hot-plugged when the domain runs or
   * is paused, in its definition when it is stopped. A runtime without it attaches no volumes after the define.
   */
  setVolumes?(id: string, volumes: readonly VolumeAttachment[]): Promise<void>;
  /** Tells a running or paused domain that volume `volumeId` (its file already grown) is now `bytes` long. */
  growVolume?(id: string, volumeId: string, bytes: number): Promise<void>;
  /**
   * A running guest's balloon (`core/balloon`); throws `NoBalloon` (the seed's `ErrNoBalloon`) for a guest defined
   * without one. A runtime without it balloons nothing.
   */
  readBalloon?(id: string): Promise<BalloonReading>;
  /** Sets what a running guest's balloon leaves it, bytes (whole KiB, at most its memory); `NoBalloon` as above. */
  setBalloon?(id: string, bytes: number): Promise<void>;
  /**
   * One identity rebind try on a running instance (000 §Identity rebind): the 1 MiB `image` hot-added as `vdz` with
   * serial `bc-rebind`, up to 2 minutes for `BCREBOUND <nonce>`, then removed, zeroed and deleted either way. True
   * when the guest answered. A runtime without it is no rebinder (nothing is reported for its instances).
   */
  rebind?(id: string, image: Uint8Array, nonce: string): Promise<boolean>;
}
