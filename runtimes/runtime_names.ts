/**
 * The built-in instance runtimes' names in `InstanceSpec.runtime` and in `Hello.runtimes` (000 §The runtimes), in a
 * module of their own so that a start that only probes for a runtime loads none of the runtimes' code.
 *
 * @module
 */

/** `libvirt-kvm`: on when `virsh` is on the helper's `PATH`. */
export const LIBVIRT_RUNTIME = "libvirt-kvm";

/** `cloud-hypervisor`: on when the `cloud-hypervisor` binary is on the helper's `PATH`. */
export const CH_RUNTIME = "cloud-hypervisor";
