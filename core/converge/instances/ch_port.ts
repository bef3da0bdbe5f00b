/**
 * The privileged half of the `cloud-hypervisor` runtime (seed 000 §The runtimes, "cloud-hypervisor under bcd helper"):
 * what needs root — the taps, the VMM's unit, handing each tap's file descriptor to the VMM, stopping the unit — named
 * by instance id only. Root reads the instance's `vm.json` itself (strictly) and builds every path and the unit from
 * it; no command line or path of the node's reaches root. `runtimes/cloudhypervisor/ch_host.ts` implements it in
 * process (a root node, tests); the helper's `ch.*` ops serve it to an unprivileged node.
 *
 * A refusal no retry fixes is a result, `{ refused }`, with its reason; a failure is thrown and retried next pass.
 *
 * @module
 */
import type { HostOutcome } from "./domain_plan.ts";

export type { HostOutcome };

/** A unit's `ActiveState` as `systemctl show` prints it (`inactive` also for a unit systemd no longer knows). */
export type UnitState = "active" | "activating" | "deactivating" | "inactive" | "failed" | "reloading";

/** The states, as `systemctl show` spells them. */
export const UNIT_STATES: readonly UnitState[] = [
  "active",
  "activating",
  "deactivating",
  "inactive",
  "failed",
  "reloading",
];

/** The port. */
export interface ChHostPort {
  /** Creates the instance's persistent taps (`tapName(id, i)`) on the record's bridges, up, owned by the node. */
  taps(id: string): Promise<HostOutcome>;
  /** Deletes the instance's taps (only names `tapName(id, i)`). */
  untaps(id: string): Promise<HostOutcome>;
  /** Starts the VMM's unit `bcd-ch-<id>.service` from the record. */
  launch(id: string): Promise<HostOutcome>;
  /** Opens tap `index` and hands its fd to the VMM with `vm.add-net` (`SCM_RIGHTS`). */
  addNet(id: string, index: number): Promise<HostOutcome>;
  /** `vm.restore` from `instances/<id>/ch` with every tap's fd as `net_fds`. */
  restore(id: string, resume: boolean): Promise<HostOutcome>;
  /** `systemctl stop`, then the unit's state as `systemctl show` reports it; the groups its user held go to root. */
  stop(id: string): Promise<HostOutcome & { readonly state?: UnitState }>;
  /** The unit's state. */
  state(id: string): Promise<UnitState>;
  /** Binds the IOMMU groups of the record's GPUs to `vfio-pci` and hands `/dev/vfio/<group>` to the VMM's uid. */
  vfio(id: string): Promise<HostOutcome>;
  /** Gives the record's GPUs back to root and to their host driver (never a group a running VMM's user holds). */
  unvfio(id: string): Promise<HostOutcome>;
  /**
   * What the VMM's unit holds of the host's memory as anonymous memory, bytes: its guest's RAM in use (the balloon
   * loop's usage reading, from the unit's cgroup `memory.stat`); `null` without a reading.
   */
  memory(id: string): Promise<number | null>;
}
