/**
 * Reads `nvidia-smi -L`, the only place nvidia-smi prints MIG devices' `MIG-…` UUIDs:
 *
 * ```
 * GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-…)
 *   MIG 3g.40gb     Device  0: (UUID: MIG-…)
 * ```
 *
 * "Device N" is the MIG device index that `-q -x` writes as `<mig_device><index>`, so the two join on
 * (GPU UUID, index).
 *
 * @module
 */
import type { GpuInventory } from "../../core/converge/devices/inventory.ts";

/** The MIG devices `-L` lists, by GPU UUID, then by MIG device index. */
export type MigUuidMap = Map<string, Map<number, { uuid: string; profile: string }>>;

const _GPU = /^GPU (\d{1,3}): .{0,200} \(UUID: (GPU-[A-Za-z0-9-]{1,64})\)\s*$/;
const _MIG = /^\s+MIG (\S{1,32})\s+Device\s+(\d{1,3}): \(UUID: (MIG-[A-Za-z0-9/-]{1,80})\)\s*$/;

/** Parses `nvidia-smi -L` (lines it does not know are skipped). */
export function parseSmiList(text: string): MigUuidMap {
  const out: MigUuidMap = new Map();
  let cur: Map<number, { uuid: string; profile: string }> | undefined;
  for (const line of text.split("\n").slice(0, 10_000)) {
    const g = _GPU.exec(line);
    if (g) {
      cur = new Map();
      out.set(g[2]!, cur);
      continue;
    }
    const m = _MIG.exec(line);
    if (m && cur) cur.set(Number(m[2]), { profile: m[1]!, uuid: m[3]! });
  }
  return out;
}

/** The inventory with each MIG device's UUID and profile from `-L`. */
export function withMigUuids(inv: GpuInventory, list: MigUuidMap): GpuInventory {
  return {
    ...inv,
    gpus: inv.gpus.map((g) => {
      const byIndex = list.get(g.uuid);
      if (!byIndex || g.migInstances.length === 0) return g;
      return {
        ...g,
        migInstances: g.migInstances.map((m) => {
          const hit = byIndex.get(m.index);
          return hit ? { ...m, uuid: hit.uuid, profile: hit.profile } : m;
        }),
      };
    }),
  };
}
