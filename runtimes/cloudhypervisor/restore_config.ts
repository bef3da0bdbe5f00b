/**
 * The configuration a memory restore starts from (seed 000 §The runtimes, Restores): a memory snapshot's
 * `config.json` must have exactly the instance's vCPUs (`boot_vcpus` and `max_vcpus`) and memory size, and it is
 * rebuilt before its first start. From the snapshot only CPU, memory and platform keys are kept, through the allowlists
 * of `config_keys.ts`; bcd supplies the payload, disks, NICs, serial, console, rng, devices and balloon from its own
 * configuration of the new instance (so the paths are the new instance's, and the balloon is bcd's, never the one
 * saved in the tenant's snapshot); anything else (`fs`, `pmem`, `vsock`, memory zones, CPU affinity, a debug console,
 * landlock rules, …) is dropped. bcd's CPU pinning replaces the snapshot's, and huge pages are dropped (a restored
 * memory configuration is not on huge pages, so the unit's `MemoryMax` charges it in full). The NICs are bcd's, each
 * `net<i>` with its MAC and no tap name (the taps come as fds with `vm.restore`), and must be as many as the
 * snapshot's, since the saved device state holds one per NIC.
 *
 * Volumes (000 §Persistent volumes) are the current spec's, never the snapshot's: the saved `disks` are read for one
 * thing only, the id each serial had ({@link restoredDisks}). A volume of the new instance whose serial a saved disk
 * had is restored with that disk's id (so the saved device state, and the guest's view of that disk, are its own),
 * at bcd's path for the volume; a volume no saved disk had is hot-added after the restore (`vm.add-disk`), so the
 * guest is told of it as of any hot-plug; a saved disk no volume has the serial of is dropped, path and all.
 *
 * @module
 */
import type { PlanNic } from "../../core/converge/instances/domain_plan.ts";
import type { DiskConfig, VmConfig } from "./api_types.ts";
import { CPUS_KEYS, MEMORY_KEYS, pick, PLATFORM_KEYS } from "./config_keys.ts";

/** The largest `config.json` read. */
export const MAX_SAVED_CONFIG_BYTES = 1024 * 1024;

/** A saved configuration a restore refuses: `snapshot-shape` (another size) or `bad-snapshot` (not a config). */
export class RestoreConfigRefused extends Error {
  override name = "RestoreConfigRefused";
  constructor(readonly reason: "snapshot-shape" | "bad-snapshot", message: string) {
    super(message);
  }
}

/** Memory keys a restore drops besides those outside the allowlist. */
const DROPPED_MEMORY = ["hugepages", "hugepage_size"];

/** The NIC configuration bcd gives NIC `i` (the same at `vm.add-net` and at a restore). */
export function nicConfig(nic: PlanNic, i: number): { id: string; mac: string; num_queues: number } {
  return { id: `net${i}`, mac: nic.mac, num_queues: 2 };
}

/** Rebuilds `saved` (the snapshot's parsed `config.json`) around `own` (bcd's configuration of the new instance). */
export function rebuildRestoreConfig(saved: unknown, own: VmConfig, nics: readonly PlanNic[]): VmConfig {
  if (typeof saved !== "object" || saved === null || Array.isArray(saved)) {
    throw new RestoreConfigRefused("bad-snapshot", "the snapshot's config.json is not an object");
  }
  const s = saved as Record<string, unknown>;
  const cpus = pick(s.cpus, CPUS_KEYS);
  const memory = pick(s.memory, MEMORY_KEYS);
  if (!cpus || !memory) {
    throw new RestoreConfigRefused("bad-snapshot", "the snapshot's config.json has no cpus or memory");
  }
  const want = own.cpus!;
  if (cpus.boot_vcpus !== want.boot_vcpus || cpus.max_vcpus !== want.max_vcpus) {
    throw new RestoreConfigRefused(
      "snapshot-shape",
      `the snapshot has ${cpus.boot_vcpus}/${cpus.max_vcpus} vCPUs (boot/max); the instance has ${want.boot_vcpus}`,
    );
  }
  if (memory.size !== own.memory!.size) {
    throw new RestoreConfigRefused(
      "snapshot-shape",
      `the snapshot has ${memory.size} bytes of memory; the instance has ${own.memory!.size}`,
    );
  }
  const savedNets = Array.isArray(s.net) ? s.net.length : 0;
  if (savedNets !== nics.length) {
    throw new RestoreConfigRefused(
      "snapshot-shape",
      `the snapshot has ${savedNets} NICs; the instance has ${nics.length}`,
    );
  }
  for (const k of DROPPED_MEMORY) delete memory[k];
  const platform = pick(s.platform, PLATFORM_KEYS);
  return {
    cpus: { ...cpus, ...(want.affinity ? { affinity: want.affinity } : {}) } as VmConfig["cpus"],
    memory: memory as unknown as VmConfig["memory"],
    ...(platform ? { platform } : {}),
    payload: own.payload,
    ...(own.disks ? { disks: restoredDisks(saved, own.disks, nics.length).disks } : {}),
    net: nics.map(nicConfig),
    ...(own.serial ? { serial: own.serial } : {}),
    ...(own.console ? { console: own.console } : {}),
    ...(own.rng ? { rng: own.rng } : {}),
    ...(own.devices ? { devices: own.devices } : {}),
    ...(own.balloon ? { balloon: own.balloon } : {}),
  };
}

/** A device id cloud-hypervisor takes from a configuration (never `__`-prefixed: those are the VMM's own). */
const DEVICE_ID = /^(?!__)[A-Za-z0-9_-]{1,64}$/;

/**
 * Splits bcd's disks `own` of a restored instance (see the module doc): the root disk and the seed (no serial) and the
 * volumes whose serial a disk of `saved` (the snapshot's parsed `config.json`) had, with that disk's id when it is a
 * valid id no other device of the restore has, go into the restore's configuration; the other volumes are to be
 * hot-added after it. Nothing but that id is taken from `saved`.
 */
export function restoredDisks(
  saved: unknown,
  own: readonly DiskConfig[],
  nics: number,
): { disks: DiskConfig[]; hotplug: DiskConfig[] } {
  const savedDisks = typeof saved === "object" && saved !== null && Array.isArray((saved as { disks?: unknown }).disks)
    ? (saved as { disks: unknown[] }).disks
    : [];
  const idOf = new Map<string, string>();
  for (const d of savedDisks) {
    if (typeof d !== "object" || d === null) continue;
    const { serial, id } = d as { serial?: unknown; id?: unknown };
    if (typeof serial === "string" && typeof id === "string" && DEVICE_ID.test(id) && !idOf.has(serial)) {
      idOf.set(serial, id);
    }
  }
  const taken = new Set<string>(Array.from({ length: nics }, (_, i) => `net${i}`));
  for (const d of own) if (d.serial === undefined && d.id !== undefined) taken.add(d.id);
  const disks: DiskConfig[] = [];
  const hotplug: DiskConfig[] = [];
  for (const d of own) {
    if (d.serial === undefined) {
      disks.push(d);
      continue;
    }
    const id = idOf.get(d.serial);
    if (id === undefined || taken.has(id)) {
      hotplug.push(d);
      continue;
    }
    taken.add(id);
    disks.push({ ...d, id });
  }
  // A hot-added volume keeps bcd's id unless a restored disk took it.
  return { disks, hotplug: hotplug.map((d) => d.id !== undefined && taken.has(d.id) ? _without(d) : d) };
}

function _without(d: DiskConfig): DiskConfig {
  const { id: _id, ...rest } = d;
  return rest;
}
