/**
 * What the balloon loop needs from a VM runtime: read a running guest's balloon and set its size. `libvirt-kvm`
 * answers with `domstats --balloon` and `virsh setmem --live` (through the helper's `libvirt.domstats` and
 * `libvirt.setmem`); `cloud-hypervisor` with `vm.info`'s `memory_actual_size` and `vm.resize`'s `desired_balloon`
 * (which is what the balloon takes: the runtime converts, so sizes here always mean what the guest is left). A guest defined without a balloon device answers {@link NoBalloon} and is never touched again.
 *
 * @module
 */

/** A running guest's balloon. */
export interface BalloonReading {
  /** What the balloon leaves the guest now, bytes. */
  readonly currentBytes: number;
  /** What the guest uses, from its balloon driver's statistics; `null` without them. */
  readonly usedBytes: number | null;
}

/** The seed's `ErrNoBalloon`: the guest has no balloon device, so nothing is read or set. */
export class NoBalloon extends Error {
  override name = "NoBalloon";
  readonly reason = "no-balloon";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** A runtime's balloon verbs. */
export interface BalloonPort {
  /** The guest's balloon; throws {@link NoBalloon} for a guest without one. */
  readBalloon(id: string): Promise<BalloonReading>;
  /** Sets what the balloon leaves the guest, bytes (whole KiB, at most its memory); {@link NoBalloon} as above. */
  setBalloon(id: string, bytes: number): Promise<void>;
}

/** A guest the loop may balloon: running, managed, its spec asking for a balloon, not on huge pages. */
export interface BalloonCandidate {
  readonly id: string;
  /** The runtime it runs on (`InstanceSpec.runtime`). */
  readonly runtime: string;
  /** Its configured memory. */
  readonly memoryBytes: number;
}
