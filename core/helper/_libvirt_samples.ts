/**
 * Test support: one accepted argument object per `libvirt.*` op, for the protocol's op-by-op tables
 * (`args_test.ts`, `codec_test.ts`, `roles_test.ts`).
 *
 * @module
 */
import type { LibvirtArgs, LibvirtOp } from "./args_libvirt.ts";

/** A plan that passes every rule. */
export const SAMPLE_PLAN: LibvirtArgs["libvirt.define"]["plan"] = {
  id: "i-1",
  allocationId: "a1",
  vcpus: 2,
  memoryMiB: 1024,
  image: { sha256: "a".repeat(64), format: "qcow2" },
  nics: [{ mac: "52:54:00:12:34:56", bridge: "br0" }],
  gpus: [],
  placement: { cpus: "0-1", mems: "0", hugepages: "none", balloon: false },
  seed: true,
  restoredFrom: null,
};

/** One accepted request per libvirt op. */
export const LIBVIRT_VALID: { [O in LibvirtOp]: LibvirtArgs[O] } = {
  "libvirt.list": {},
  "libvirt.define": { plan: SAMPLE_PLAN },
  "libvirt.start": { id: "i-1", paused: false },
  "libvirt.suspend": { id: "i-1" },
  "libvirt.resume": { id: "i-1" },
  "libvirt.shutdown": { id: "i-1" },
  "libvirt.destroy": { id: "i-1" },
  "libvirt.undefine": { id: "i-1" },
  "libvirt.blockresize": { id: "i-1", bytes: 2 ** 33 },
  "libvirt.save": { id: "i-1" },
  "libvirt.restore": { id: "i-1", paused: true },
  "libvirt.setmem": { id: "i-1", kib: 1048576 },
  "libvirt.domstats": { id: "i-1" },
};

/** The same, as request-line argument JSON. */
export const LIBVIRT_LINES: { [O in LibvirtOp]: string } = Object.fromEntries(
  Object.entries(LIBVIRT_VALID).map(([k, v]) => [k, JSON.stringify(v)]),
) as { [O in LibvirtOp]: string };
