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
 * @module
 */
import type { PlanNic } from "../../core/converge/instances/domain_plan.ts";
import type { VmConfig } from "./api_types.ts";
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
    ...(own.disks ? { disks: own.disks } : {}),
    net: nics.map(nicConfig),
    ...(own.serial ? { serial: own.serial } : {}),
    ...(own.console ? { console: own.console } : {}),
    ...(own.rng ? { rng: own.rng } : {}),
    ...(own.devices ? { devices: own.devices } : {}),
    ...(own.balloon ? { balloon: own.balloon } : {}),
  };
}
