/**
 * The `hugepages` unit: the huge page pool per page size, host-wide or per NUMA node, through sysfs
 * (`/sys/kernel/mm/hugepages/hugepages-<kB>kB/nr_hugepages`, `/sys/devices/system/node/node<N>/hugepages/…`).
 *
 * Settings: `{"pools": [{"size": "2M" | "1G", "count": <pages>, "node"?: <NUMA node>}, …]}`, each (size, node) once.
 *
 * Choices the seed leaves open, written down:
 * - A shrink never goes below the pages in use (total less free): only free pages are given back. A pool the kernel
 *   could not fill (fragmented memory) is reported with what it reserved, and the section stays `PROGRESSING` so the
 *   next pass tries again.
 * - A size this host's kernel does not offer (no `hugepages-<kB>kB` directory) fails the unit naming the size, never as
 *   a permission error; so does a NUMA node the host does not have.
 * - "Persisted for boot": the helper keeps what bcd set, with each pool's count before bcd first set it, in its
 *   record file (`/etc/bcd/host/hugepages.json`); a pool dropped from the section gets that count back (never below
 *   its pages in use) and leaves the record. After a reboot the node's first pass sets the pools again.
 *
 * @module
 */
import { integer, object, refuse } from "./schema.ts";

/** The page sizes bcd manages, with their sysfs size in kB. */
export const HUGEPAGE_SIZES = { "2M": 2048, "1G": 1048576 } as const;
/** A page size name. */
export type HugepageSize = keyof typeof HUGEPAGE_SIZES;
/** The most pages of one pool (a 2 MiB pool of 64 TiB). */
export const MAX_HUGEPAGES = 2 ** 25;
/** The highest NUMA node number. */
export const MAX_NUMA_NODE = 1023;

/** Whether `s` is a size bcd manages. */
export function isHugepageSize(s: unknown): s is HugepageSize {
  return typeof s === "string" && Object.hasOwn(HUGEPAGE_SIZES, s);
}

/** One pool: a size, host-wide (`node` absent) or on one NUMA node. */
export interface HugepagePool {
  readonly size: HugepageSize;
  readonly node?: number;
  readonly count: number;
}

/** The unit's checked settings. */
export interface HugepageSettings {
  readonly pools: readonly HugepagePool[];
}

/** A pool's identity, as records key it: `2M` or `2M@node0`. */
export function poolKey(p: { readonly size: HugepageSize; readonly node?: number }): string {
  return p.node === undefined ? p.size : `${p.size}@node${p.node}`;
}

/** Checks the unit's settings. */
export function parseHugepageSettings(raw: Record<string, unknown>): HugepageSettings {
  const s = object("hugepages", "settings", raw, ["pools"], ["pools"]);
  if (!Array.isArray(s.pools) || s.pools.length > 64) {
    refuse("hugepages", "settings.pools", s.pools, "is not a list of at most 64 pools");
  }
  const seen = new Set<string>();
  const pools: HugepagePool[] = [];
  for (const [i, r] of (s.pools as unknown[]).entries()) {
    const path = `settings.pools[${i}]`;
    const p = object("hugepages", path, r, ["size", "count", "node"], ["size", "count"]);
    if (!isHugepageSize(p.size)) {
      refuse("hugepages", `${path}.size`, p.size, `is not one of ${Object.keys(HUGEPAGE_SIZES).join(", ")}`);
    }
    const count = integer("hugepages", `${path}.count`, p.count, 0, MAX_HUGEPAGES);
    const node = p.node === undefined ? undefined : integer("hugepages", `${path}.node`, p.node, 0, MAX_NUMA_NODE);
    const pool: HugepagePool = { size: p.size, count, ...(node !== undefined ? { node } : {}) };
    if (seen.has(poolKey(pool))) refuse("hugepages", path, poolKey(pool), "names a pool twice");
    seen.add(poolKey(pool));
    pools.push(pool);
  }
  return { pools };
}

/** One pool as sysfs shows it. */
export interface PoolState {
  readonly total: number;
  readonly free: number;
}

/** A size the host offers: host-wide and per NUMA node. */
export interface SizeState extends PoolState {
  readonly nodes: Readonly<Record<string, PoolState>>;
}

/** A pool bcd set, as the record keeps it. */
export interface ManagedPool {
  readonly size: HugepageSize;
  readonly node?: number;
  readonly count: number;
  /** The pool's count before bcd first set it. */
  readonly original: number;
}

/** What the helper reports. */
export interface HugepageObserved {
  /** The sizes this host offers (a size it lacks is absent). */
  readonly sizes: Readonly<Partial<Record<HugepageSize, SizeState>>>;
  readonly managed: readonly ManagedPool[];
}

/** A step: set a pool to `count` (recording its original first), or give a managed pool its original count back. */
export type HugepageStep =
  | { readonly op: "set"; readonly size: HugepageSize; readonly node?: number; readonly count: number }
  | { readonly op: "restore"; readonly size: HugepageSize; readonly node?: number };

/** A pool the host cannot have (a size or NUMA node it lacks); terminal. */
export class HugepageUnavailable extends Error {
  override name = "HugepageUnavailable";
}

/** The pool's state on the host, or the reason it has none. */
export function poolState(observed: HugepageObserved, p: { size: HugepageSize; node?: number }): PoolState {
  const size = observed.sizes[p.size];
  if (!size) {
    throw new HugepageUnavailable(
      `hugepages: this host has no ${p.size} huge pages (no hugepages-${HUGEPAGE_SIZES[p.size]}kB in sysfs)`,
    );
  }
  if (p.node === undefined) return size;
  const n = size.nodes[String(p.node)];
  if (!n) throw new HugepageUnavailable(`hugepages: this host has no NUMA node ${p.node} for ${p.size} huge pages`);
  return n;
}

/**
 * The minimal steps: a wanted pool whose count or record differs is set; a managed pool no longer wanted is restored.
 * Throws {@link HugepageUnavailable} for a size or node the host lacks.
 */
export function planHugepages(desired: HugepageSettings | undefined, observed: HugepageObserved): HugepageStep[] {
  const steps: HugepageStep[] = [];
  const managed = new Map(observed.managed.map((m) => [poolKey(m), m]));
  const wanted = new Set<string>();
  for (const p of desired?.pools ?? []) {
    wanted.add(poolKey(p));
    const state = poolState(observed, p);
    if (state.total !== p.count || managed.get(poolKey(p))?.count !== p.count) {
      steps.push({ op: "set", size: p.size, ...(p.node !== undefined ? { node: p.node } : {}), count: p.count });
    }
  }
  for (const [k, m] of [...managed].sort(([a], [b]) => a < b ? -1 : 1)) {
    if (!wanted.has(k)) steps.push({ op: "restore", size: m.size, ...(m.node !== undefined ? { node: m.node } : {}) });
  }
  return steps;
}
