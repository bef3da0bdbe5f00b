/**
 * The instance runtimes' helper ops (`libvirt.*`, `ch.*`) by name alone: what `protocol.ts` lists among the protocol's
 * ops. Their argument checks (`args_libvirt.ts`, `args_ch.ts`) only the helper's server runs; kept apart so that an
 * agent, which sends these ops, does not load those checks at start (issue 24).
 *
 * @module
 */

/** The libvirt ops, in the order the docs list them. */
export const LIBVIRT_OPS = [
  "libvirt.list",
  "libvirt.define",
  "libvirt.start",
  "libvirt.suspend",
  "libvirt.resume",
  "libvirt.shutdown",
  "libvirt.destroy",
  "libvirt.undefine",
  "libvirt.blockresize",
  "libvirt.attach_disk",
  "libvirt.detach_disk",
  "libvirt.save",
  "libvirt.restore",
  "libvirt.setmem",
  "libvirt.domstats",
] as const;

/** A libvirt op. */
export type LibvirtOp = typeof LIBVIRT_OPS[number];

/** The ch ops, in the order the docs list them. */
export const CH_OPS = [
  "ch.taps",
  "ch.untaps",
  "ch.launch",
  "ch.add_net",
  "ch.restore",
  "ch.stop",
  "ch.state",
  "ch.vfio",
  "ch.unvfio",
  "ch.memory",
] as const;

/** A ch op. */
export type ChOp = typeof CH_OPS[number];
