/**
 * In-memory {@link SysctlPort}, {@link HugepagePort}, {@link KernelModulesPort} and {@link PackagePort} that keep the
 * same rules the helper's real backends keep
 * (originals recorded on first set, restores give them back, shrinks stop at pages in use, unknown keys read `null`),
 * for converger tests and the ports' shared contract suite.
 *
 * @module
 */
import { type HugepageObserved, type HugepageSize, type HugepageStep, type ManagedPool, poolKey } from "./hugepages.ts";
import type { KernelModulesObserved, KernelModuleStep, ManagedModule } from "./kernel_modules.ts";
import type {
  HugepagePort,
  KernelModulesApplied,
  KernelModulesPort,
  MigApplied,
  MigPort,
  PackageApplied,
  PackagePort,
  PoolResult,
  SharingApplied,
  SharingPort,
  SysctlPort,
} from "./ports.ts";
import { MPS_COMPUTE_MODE, type SharingObserved, type SharingStep } from "./gpu_sharing.ts";
import type { MigInstance, MigObserved, MigStep } from "./mig_layout.ts";
import { type PackageObserved, type PackageStep, type PackageUnit, UNIT_SERVICES } from "./packages.ts";
import type { ManagedSysctl, SysctlObserved, SysctlStep } from "./sysctl.ts";

/** A fake kernel's sysctls and bcd's file. */
export class FakeSysctl implements SysctlPort {
  readonly live: Map<string, string>;
  readonly managed = new Map<string, ManagedSysctl>();
  readonly applied: SysctlStep[][] = [];
  constructor(live: Record<string, string>) {
    this.live = new Map(Object.entries(live));
  }
  read(keys: readonly string[]): Promise<SysctlObserved> {
    const live: Record<string, string | null> = {};
    for (const k of [...keys, ...this.managed.keys()]) live[k] = this.live.get(k) ?? null;
    return Promise.resolve({ live, managed: Object.fromEntries(this.managed) });
  }
  apply(steps: readonly SysctlStep[]): Promise<Record<string, string | null>> {
    this.applied.push([...steps]);
    const back: Record<string, string | null> = {};
    for (const s of steps) {
      const cur = this.live.get(s.key);
      if (cur === undefined) return Promise.reject(new Error(`sysctl ${s.key}: no such key`));
      if (s.op === "set") {
        this.managed.set(s.key, { value: s.value, original: this.managed.get(s.key)?.original ?? cur });
        this.live.set(s.key, s.value);
      } else {
        const rec = this.managed.get(s.key);
        if (rec) this.live.set(s.key, rec.original);
        this.managed.delete(s.key);
      }
      back[s.key] = this.live.get(s.key) ?? null;
    }
    return Promise.resolve(back);
  }
}

/** One fake pool: total and pages in use; `limit` caps what the kernel can reserve. */
interface _Pool {
  total: number;
  used: number;
  limit: number;
}

/** A fake host's huge page pools (host-wide pools only, plus NUMA node pools keyed `size@nodeN`). */
export class FakeHugepages implements HugepagePort {
  readonly pools = new Map<string, _Pool>();
  readonly managed = new Map<string, ManagedPool>();
  readonly applied: HugepageStep[][] = [];
  /** `sizes`: the sizes the host offers, with the NUMA nodes each has. */
  constructor(sizes: Partial<Record<HugepageSize, readonly number[]>>) {
    for (const [size, nodes] of Object.entries(sizes) as [HugepageSize, number[]][]) {
      this.pools.set(size, { total: 0, used: 0, limit: Infinity });
      for (const n of nodes) this.pools.set(poolKey({ size, node: n }), { total: 0, used: 0, limit: Infinity });
    }
  }
  pool(size: HugepageSize, node?: number): _Pool {
    const p = this.pools.get(poolKey({ size, ...(node !== undefined ? { node } : {}) }));
    if (!p) throw new Error(`no pool ${size} ${node}`);
    return p;
  }
  read(): Promise<HugepageObserved> {
    const sizes: HugepageObserved["sizes"] = {};
    for (const size of ["2M", "1G"] as const) {
      const host = this.pools.get(size);
      if (!host) continue;
      const nodes: Record<string, { total: number; free: number }> = {};
      for (const [k, p] of this.pools) {
        const m = k.match(/^(\w+)@node(\d+)$/);
        if (m && m[1] === size) nodes[m[2]!] = { total: p.total, free: p.total - p.used };
      }
      (sizes as Record<string, unknown>)[size] = { total: host.total, free: host.total - host.used, nodes };
    }
    return Promise.resolve({ sizes, managed: [...this.managed.values()] });
  }
  apply(steps: readonly HugepageStep[]): Promise<PoolResult[]> {
    this.applied.push([...steps]);
    const out: PoolResult[] = [];
    for (const s of steps) {
      const key = poolKey(s);
      const p = this.pools.get(key);
      if (!p) return Promise.reject(new Error(`no pool ${key}`));
      const node = s.node !== undefined ? { node: s.node } : {};
      if (s.op === "set") {
        const original = this.managed.get(key)?.original ?? p.total;
        this.managed.set(key, { size: s.size, ...node, count: s.count, original });
        p.total = Math.min(p.limit, Math.max(s.count, p.used));
        out.push({ size: s.size, ...node, wanted: s.count, total: p.total });
      } else {
        const rec = this.managed.get(key);
        if (rec) p.total = Math.max(rec.original, p.used);
        this.managed.delete(key);
      }
    }
    return Promise.resolve(out);
  }
}

/** A fake kernel's modules and bcd's files: `available` can be loaded, `busy` cannot be unloaded. */
export class FakeKernelModules implements KernelModulesPort {
  readonly loaded: Set<string>;
  readonly managed = new Map<string, ManagedModule>();
  readonly busy = new Set<string>();
  readonly applied: KernelModuleStep[][] = [];
  constructor(readonly available: readonly string[], loaded: readonly string[] = []) {
    this.loaded = new Set(loaded);
  }
  read(): Promise<KernelModulesObserved> {
    return Promise.resolve({ loaded: [...this.loaded].sort(), managed: [...this.managed.values()] });
  }
  apply(steps: readonly KernelModuleStep[]): Promise<KernelModulesApplied> {
    this.applied.push([...steps]);
    const failures: Record<string, string> = {};
    for (const s of steps) {
      if (s.op === "load") {
        const loadedByBcd = this.managed.get(s.name)?.loadedByBcd ?? !this.loaded.has(s.name);
        this.managed.set(s.name, { name: s.name, ...(s.options ? { options: s.options } : {}), loadedByBcd });
        if (this.loaded.has(s.name)) continue;
        if (this.available.includes(s.name)) this.loaded.add(s.name);
        else failures[s.name] = `Module ${s.name} not found`;
        continue;
      }
      if (s.unload && this.loaded.has(s.name)) {
        if (this.busy.has(s.name)) {
          failures[s.name] = `Module ${s.name} is in use`;
          continue;
        }
        this.loaded.delete(s.name);
      }
      this.managed.delete(s.name);
    }
    return Promise.resolve({ loaded: [...this.loaded].sort(), failures });
  }
}

/** A fake host's packages: what is installed, what the repository offers, the running driver, the services. */
export class FakePackages implements PackagePort {
  /** Package → installed version. */
  readonly installed = new Map<string, string>();
  /** `pkg=version` the repository offers. */
  readonly available = new Set<string>();
  /** The driver the kernel runs (`null`: none). */
  running: string | null = null;
  readonly enabled = new Set<string>();
  readonly active = new Set<string>();
  readonly applied: PackageStep[][] = [];

  read(unit: PackageUnit, pkg: string): Promise<PackageObserved> {
    const svc = UNIT_SERVICES[unit];
    return Promise.resolve({
      installed: this.installed.get(pkg) ?? null,
      ...(unit === "nvidia-driver" ? { running: this.running } : {}),
      ...(svc !== undefined ? { service: { enabled: this.enabled.has(svc), active: this.active.has(svc) } } : {}),
    });
  }

  async apply(unit: PackageUnit, pkg: string, steps: readonly PackageStep[]): Promise<PackageApplied> {
    this.applied.push([...steps]);
    for (const s of steps) {
      if (s.op === "install") {
        if (!this.available.has(`${s.package}=${s.version}`)) {
          return {
            observed: await this.read(unit, pkg),
            failure:
              `apt-get install ${s.package}=${s.version}: E: Version '${s.version}' for '${s.package}' was not found`,
          };
        }
        this.installed.set(s.package, s.version);
        continue;
      }
      const svc = UNIT_SERVICES[unit];
      if (svc !== undefined) {
        this.enabled.add(svc);
        this.active.add(svc);
      }
    }
    return { observed: await this.read(unit, pkg) };
  }
}

/** The slices a GPU instance profile takes (`3g.40gb` → 3); a GPU has 7. */
export function migSlices(profile: string): number {
  return Number(/^(\d)g\./.exec(profile)?.[1] ?? "8");
}

/** A fake host's MIG GPUs: instances per GPU (ids given lowest free first), capacity 7 slices, bcd's record. */
export class FakeMig implements MigPort {
  readonly gpus = new Map<string, { migEnabled: boolean; instances: MigInstance[] }>();
  readonly managed: { gpu: string; gi: number }[] = [];
  readonly applied: MigStep[][] = [];
  constructor(gpus: Record<string, boolean>) {
    for (const [uuid, on] of Object.entries(gpus)) this.gpus.set(uuid, { migEnabled: on, instances: [] });
  }
  read(): Promise<MigObserved> {
    return Promise.resolve({
      gpus: [...this.gpus].map(([uuid, g]) => ({ uuid, migEnabled: g.migEnabled, instances: [...g.instances] })),
      managed: [...this.managed],
    });
  }
  async apply(steps: readonly MigStep[]): Promise<MigApplied> {
    this.applied.push([...steps]);
    for (const s of steps) {
      const g = this.gpus.get(s.gpu)!;
      if (s.op === "destroy") {
        g.instances = g.instances.filter((i) => i.gi !== s.gi);
        const k = this.managed.findIndex((m) => m.gpu === s.gpu && m.gi === s.gi);
        if (k >= 0) this.managed.splice(k, 1);
        continue;
      }
      const used = g.instances.reduce((n, i) => n + migSlices(i.profile), 0);
      if (used + migSlices(s.profile) > 7) {
        return {
          observed: await this.read(),
          failure: `Unable to create a GPU instance on GPU ${s.gpu}: Insufficient Resources`,
        };
      }
      let gi = 1;
      while (g.instances.some((i) => i.gi === gi)) gi++;
      g.instances.push({ gi, profile: s.profile, cis: [0] });
      this.managed.push({ gpu: s.gpu, gi });
    }
    return { observed: await this.read() };
  }
}

/** A fake host's compute modes and MPS daemon, with bcd's record. */
export class FakeSharing implements SharingPort {
  readonly modes: Map<string, string>;
  mpsRunning = false;
  started: SharingObserved["mpsStarted"];
  readonly originals = new Map<string, string>();
  readonly applied: SharingStep[][] = [];
  constructor(gpus: readonly string[]) {
    this.modes = new Map(gpus.map((g) => [g, "Default"]));
  }
  read(): Promise<SharingObserved> {
    return Promise.resolve({
      gpus: [...this.modes].map(([uuid, computeMode]) => ({ uuid, computeMode })),
      mpsRunning: this.mpsRunning,
      ...(this.started ? { mpsStarted: this.started } : {}),
      computeModes: Object.fromEntries(this.originals),
    });
  }
  async apply(steps: readonly SharingStep[]): Promise<SharingApplied> {
    this.applied.push([...steps]);
    for (const s of steps) {
      if (s.op === "mps-stop") {
        this.mpsRunning = false;
        this.started = undefined;
      } else if (s.op === "compute-mode") {
        if (!this.originals.has(s.gpu)) this.originals.set(s.gpu, this.modes.get(s.gpu)!);
        this.modes.set(s.gpu, MPS_COMPUTE_MODE);
      } else if (s.op === "restore-compute-mode") {
        this.modes.set(s.gpu, this.originals.get(s.gpu) ?? "Default");
        this.originals.delete(s.gpu);
      } else {
        if (this.mpsRunning) {
          return { observed: await this.read(), failure: "An instance of this daemon is already running" };
        }
        this.mpsRunning = true;
        this.started = {
          gpus: [...s.gpus],
          ...(s.activeThreadPercentage ? { activeThreadPercentage: s.activeThreadPercentage } : {}),
        };
      }
    }
    return { observed: await this.read() };
  }
}
