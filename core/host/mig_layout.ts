/**
 * The `mig-layout` unit's settings and plan: the GPU instances each listed GPU holds, by profile
 * (`nvidia-smi mig -cgi <profile> -C` makes one with its default compute instance; `-dci` then `-dgi` removes one).
 *
 * Settings: `{"gpus": [{"gpu": "GPU-<uuid>", "instances": ["3g.40gb", "1g.10gb", …]}, …]}`. A GPU is named by its UUID
 * (as the `gpu.mig` atoms name it), each at most once; a profile is `<n>g.<m>gb` with an optional `+me`/`+gfx`
 * suffix, at most {@link MAX_MIG_INSTANCES} per GPU.
 *
 * Choices the seed leaves open (its host-configuration page is not among the seeds), written down:
 * - A listed GPU's layout is the list: instances whose profile the list still wants are kept (lowest instance id
 *   first), the others are removed and the missing ones made. So a changed layout touches only what changed, and a
 *   hold on a kept instance never notices.
 * - An instance is removed only when no hold uses it: a layout that would remove an instance a bound hold uses (an
 *   atom `<GPU UUID>/gi<N>/ci<M>`) fails the unit, naming the hold, and nothing on that GPU changes.
 * - What bcd made is recorded (by the helper): a GPU dropped from the list, or the whole unit dropped from the
 *   section, gets exactly the instances bcd made removed again (hold permitting); instances bcd did not make on an
 *   unlisted GPU are never touched.
 * - MIG mode is not switched by bcd (it takes a GPU reset): a listed GPU with MIG mode off fails the unit, saying so.
 * - A GPU a hold uses whole is not re-laid out while it is held: a step on it fails the unit, naming the hold.
 *
 * @module
 */
import { object, refuse } from "./schema.ts";

/** The most GPU instances one GPU holds (an A100/H100 has 7 slices). */
export const MAX_MIG_INSTANCES = 7;
/** The most GPUs one layout lists. */
export const MAX_MIG_GPUS = 64;

const _GPU = /^GPU-[0-9a-fA-F-]{8,64}$/;
const _PROFILE = /^[1-8]g\.[0-9]{1,3}gb(?:\+(?:me|gfx))?$/;

/** Whether `s` is a GPU UUID as the atoms spell it. */
export function isGpuUuid(s: unknown): s is string {
  return typeof s === "string" && _GPU.test(s);
}

/** Whether `s` is a GPU instance profile name (`3g.40gb`, `1g.10gb+me`). */
export function isMigProfile(s: unknown): s is string {
  return typeof s === "string" && _PROFILE.test(s);
}

/** The unit's checked settings: each listed GPU's wanted profiles. */
export interface MigLayoutSettings {
  readonly gpus: readonly { readonly gpu: string; readonly instances: readonly string[] }[];
}

/** Checks the unit's settings. */
export function parseMigLayoutSettings(raw: Record<string, unknown>): MigLayoutSettings {
  const s = object("mig-layout", "settings", raw, ["gpus"], ["gpus"]);
  if (!Array.isArray(s.gpus) || s.gpus.length > MAX_MIG_GPUS) {
    refuse("mig-layout", "settings.gpus", s.gpus, `is not a list of at most ${MAX_MIG_GPUS} GPUs`);
  }
  const seen = new Set<string>();
  const gpus = (s.gpus as unknown[]).map((r, i) => {
    const path = `settings.gpus[${i}]`;
    const g = object("mig-layout", path, r, ["gpu", "instances"], ["gpu", "instances"]);
    if (!isGpuUuid(g.gpu)) refuse("mig-layout", `${path}.gpu`, g.gpu, "is not a GPU UUID (GPU-…)");
    if (seen.has(g.gpu)) refuse("mig-layout", `${path}.gpu`, g.gpu, "is listed twice");
    seen.add(g.gpu);
    if (!Array.isArray(g.instances) || g.instances.length > MAX_MIG_INSTANCES) {
      refuse("mig-layout", `${path}.instances`, g.instances, `is not a list of at most ${MAX_MIG_INSTANCES} profiles`);
    }
    for (const [j, p] of (g.instances as unknown[]).entries()) {
      if (!isMigProfile(p)) refuse("mig-layout", `${path}.instances[${j}]`, p, "is not a MIG profile (e.g. 3g.40gb)");
    }
    return { gpu: g.gpu, instances: [...(g.instances as string[])] };
  });
  return { gpus };
}

/** One GPU instance as `nvidia-smi mig -lgi` / `-lci` show it. */
export interface MigInstance {
  readonly gi: number;
  readonly profile: string;
  /** Its compute instances' ids. */
  readonly cis: readonly number[];
}

/** What the helper reports. */
export interface MigObserved {
  readonly gpus: readonly {
    readonly uuid: string;
    readonly migEnabled: boolean;
    readonly instances: readonly MigInstance[];
  }[];
  /** The GPU instances bcd made (the helper's record). */
  readonly managed: readonly { readonly gpu: string; readonly gi: number }[];
}

/** A step: make a GPU instance (with its default compute instance), or remove one with its compute instances. */
export type MigStep =
  | { readonly op: "create"; readonly gpu: string; readonly profile: string }
  | { readonly op: "destroy"; readonly gpu: string; readonly gi: number; readonly cis: readonly number[] };

/** A layout that cannot be carried out: terminal at this generation; the message names the GPU, and the hold. */
export class MigLayoutRefused extends Error {
  override name = "MigLayoutRefused";
}

/**
 * The minimal steps from `observed` to `desired` (`undefined`: the unit is not in the section). `holds` maps each
 * bound `gpu.mig` atom (`<GPU UUID>/gi<N>/ci<M>`), and each GPU held whole (its UUID), to the hold (allocation id)
 * that uses it. Throws
 * {@link MigLayoutRefused} when a listed GPU is absent or has MIG mode off, or when an instance to remove is in use;
 * on success, every destroy comes before any create on the same GPU.
 */
export function planMigLayout(
  desired: MigLayoutSettings | undefined,
  observed: MigObserved,
  holds: ReadonlyMap<string, string>,
): MigStep[] {
  const byUuid = new Map(observed.gpus.map((g) => [g.uuid, g]));
  const managed = new Set(observed.managed.map((m) => `${m.gpu}/gi${m.gi}`));
  const listed = new Set((desired?.gpus ?? []).map((g) => g.gpu));
  const steps: MigStep[] = [];
  const wholeFree = (gpu: string) => {
    const h = holds.get(gpu);
    if (h !== undefined) throw new MigLayoutRefused(`mig-layout: GPU ${gpu} would change, but hold ${h} uses it whole`);
  };
  const destroy = (gpu: string, i: MigInstance) => {
    wholeFree(gpu);
    const users = i.cis.map((ci) => holds.get(`${gpu}/gi${i.gi}/ci${ci}`)).filter((h) => h !== undefined);
    if (users.length) {
      throw new MigLayoutRefused(
        `mig-layout: GPU ${gpu} instance gi${i.gi} (${i.profile}) would be removed, but hold ${
          [...new Set(users)].join(", ")
        } uses it`,
      );
    }
    steps.push({ op: "destroy", gpu, gi: i.gi, cis: [...i.cis] });
  };
  for (const want of desired?.gpus ?? []) {
    const g = byUuid.get(want.gpu);
    if (!g) throw new MigLayoutRefused(`mig-layout: GPU ${want.gpu} is not on this host`);
    if (!g.migEnabled) {
      throw new MigLayoutRefused(
        `mig-layout: MIG mode is off on GPU ${want.gpu}; bcd does not switch it (a GPU reset)`,
      );
    }
    const left = new Map<string, number>();
    for (const p of want.instances) left.set(p, (left.get(p) ?? 0) + 1);
    const drop: MigInstance[] = [];
    for (const i of [...g.instances].sort((a, b) => a.gi - b.gi)) {
      const n = left.get(i.profile) ?? 0;
      if (n > 0) left.set(i.profile, n - 1);
      else drop.push(i);
    }
    for (const i of drop) destroy(want.gpu, i);
    for (const p of want.instances) {
      const n = left.get(p) ?? 0;
      if (n === 0) continue;
      left.set(p, n - 1);
      wholeFree(want.gpu);
      steps.push({ op: "create", gpu: want.gpu, profile: p });
    }
  }
  // GPUs no longer listed: what bcd made there goes, nothing else.
  for (const g of [...observed.gpus].sort((a, b) => a.uuid < b.uuid ? -1 : 1)) {
    if (listed.has(g.uuid)) continue;
    for (const i of [...g.instances].sort((a, b) => a.gi - b.gi)) {
      if (managed.has(`${g.uuid}/gi${i.gi}`)) destroy(g.uuid, i);
    }
  }
  return steps;
}

/** The `holds` map {@link planMigLayout} takes, from the holds bound on the host. */
export function migHoldUsers(
  holds: readonly { readonly allocationId: string; readonly devices: readonly { class: string; atom: string }[] }[],
): Map<string, string> {
  const out = new Map<string, string>();
  for (const h of holds) {
    for (const d of h.devices) if (d.class === "gpu.mig" || d.class === "gpu") out.set(d.atom, h.allocationId);
  }
  return out;
}

/**
 * Why root refuses `steps` on a host whose layout is `observed` and whose hold files name `holds` (see
 * {@link migHoldUsers}), or `undefined`: a destroy of an instance a hold uses (by the instance's compute instances as
 * the host has them, and as the request names them), or any step on a GPU a hold uses whole.
 */
export function migStepsProblem(
  steps: readonly MigStep[],
  observed: MigObserved,
  holds: ReadonlyMap<string, string>,
): string | undefined {
  for (const s of steps) {
    const whole = holds.get(s.gpu);
    if (whole !== undefined) return `GPU ${s.gpu} is used whole by hold ${whole}`;
    if (s.op !== "destroy") continue;
    const have = observed.gpus.find((g) => g.uuid === s.gpu)?.instances.find((i) => i.gi === s.gi)?.cis ?? [];
    for (const ci of new Set([...have, ...s.cis])) {
      const h = holds.get(`${s.gpu}/gi${s.gi}/ci${ci}`);
      if (h !== undefined) return `GPU ${s.gpu} instance gi${s.gi} is used by hold ${h}`;
    }
  }
  return undefined;
}
