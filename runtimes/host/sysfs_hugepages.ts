/**
 * The `hugepages` unit's host half, run by the root helper: the pools in sysfs
 * (`<sys>/kernel/mm/hugepages/hugepages-<kB>kB/{nr,free}_hugepages` and the same under
 * `<sys>/devices/system/node/node<N>/hugepages/`) and the record of what bcd set (`<etc>/bcd/host/hugepages.json`,
 * each pool with its count before bcd first set it). Paths are built from the helper's roots, a size name and a node
 * number, never from a request. A shrink never asks for fewer pages than are in use; a size the kernel does not offer
 * is refused by name.
 *
 * @module
 */
import {
  HUGEPAGE_SIZES,
  type HugepageObserved,
  type HugepagePort,
  type HugepageSize,
  type HugepageStep,
  type ManagedPool,
  poolKey,
  type PoolResult,
  type SizeState,
} from "../../core/host/mod.ts";

/** The record file, under the helper's /etc root. */
export const HUGEPAGES_RECORD = "bcd/host/hugepages.json";

/** Options of {@link SysfsHugepages}. */
export interface SysfsHugepagesOptions {
  /** Default `/sys`. */
  readonly sys?: string;
  /** Default `/etc`. */
  readonly etc?: string;
}

async function _int(path: string): Promise<number> {
  const n = Number((await Deno.readTextFile(path)).trim());
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${path} does not hold a count`);
  return n;
}

/** The real huge page port. */
export class SysfsHugepages implements HugepagePort {
  readonly #sys: string;
  readonly record: string;
  constructor(opts: SysfsHugepagesOptions = {}) {
    this.#sys = opts.sys ?? "/sys";
    this.record = `${opts.etc ?? "/etc"}/${HUGEPAGES_RECORD}`;
  }

  #dir(size: HugepageSize, node?: number): string {
    const leaf = `hugepages/hugepages-${HUGEPAGE_SIZES[size]}kB`;
    return node === undefined
      ? `${this.#sys}/kernel/mm/${leaf}`
      : `${this.#sys}/devices/system/node/node${node}/${leaf}`;
  }

  async #exists(dir: string): Promise<boolean> {
    try {
      return (await Deno.stat(dir)).isDirectory;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
  }

  async #managed(): Promise<Map<string, ManagedPool>> {
    try {
      const text = await Deno.readTextFile(this.record);
      if (text.length > 64 * 1024) throw new RangeError(`${this.record} is larger than 64 KiB`);
      const list = JSON.parse(text) as ManagedPool[];
      if (!Array.isArray(list)) throw new RangeError(`${this.record} is not a list`);
      return new Map(list.map((m) => [poolKey(m), m]));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return new Map();
      throw e;
    }
  }

  async #write(m: Map<string, ManagedPool>): Promise<void> {
    await Deno.mkdir(this.record.slice(0, this.record.lastIndexOf("/")), { recursive: true });
    const tmp = `${this.record}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify([...m.values()]) + "\n", { mode: 0o644 });
    await Deno.rename(tmp, this.record);
  }

  async #nodes(): Promise<number[]> {
    const out: number[] = [];
    try {
      for await (const e of Deno.readDir(`${this.#sys}/devices/system/node`)) {
        const m = e.name.match(/^node(\d{1,4})$/);
        if (m) out.push(Number(m[1]));
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out.sort((a, b) => a - b);
  }

  async read(): Promise<HugepageObserved> {
    const sizes: Partial<Record<HugepageSize, SizeState>> = {};
    const nodes = await this.#nodes();
    for (const size of Object.keys(HUGEPAGE_SIZES) as HugepageSize[]) {
      const dir = this.#dir(size);
      if (!await this.#exists(dir)) continue;
      const perNode: Record<string, { total: number; free: number }> = {};
      for (const n of nodes) {
        const nd = this.#dir(size, n);
        if (await this.#exists(nd)) {
          perNode[String(n)] = { total: await _int(`${nd}/nr_hugepages`), free: await _int(`${nd}/free_hugepages`) };
        }
      }
      sizes[size] = {
        total: await _int(`${dir}/nr_hugepages`),
        free: await _int(`${dir}/free_hugepages`),
        nodes: perNode,
      };
    }
    return { sizes, managed: [...(await this.#managed()).values()] };
  }

  async #pool(size: HugepageSize, node?: number): Promise<{ dir: string; total: number; inUse: number }> {
    const dir = this.#dir(size, node);
    if (!await this.#exists(dir)) {
      throw new RangeError(
        node === undefined
          ? `this host has no ${size} huge pages (no hugepages-${HUGEPAGE_SIZES[size]}kB in sysfs)`
          : `this host has no NUMA node ${node} with ${size} huge pages`,
      );
    }
    const total = await _int(`${dir}/nr_hugepages`);
    return { dir, total, inUse: total - await _int(`${dir}/free_hugepages`) };
  }

  async apply(steps: readonly HugepageStep[]): Promise<PoolResult[]> {
    const managed = await this.#managed();
    const out: PoolResult[] = [];
    for (const s of steps) {
      const key = poolKey(s);
      const node = s.node !== undefined ? { node: s.node } : {};
      const p = await this.#pool(s.size, s.node);
      if (s.op === "set") {
        managed.set(key, { size: s.size, ...node, count: s.count, original: managed.get(key)?.original ?? p.total });
        await this.#write(managed);
        await Deno.writeTextFile(`${p.dir}/nr_hugepages`, `${Math.max(s.count, p.inUse)}\n`);
        out.push({ size: s.size, ...node, wanted: s.count, total: await _int(`${p.dir}/nr_hugepages`) });
      } else {
        const rec = managed.get(key);
        if (rec) await Deno.writeTextFile(`${p.dir}/nr_hugepages`, `${Math.max(rec.original, p.inUse)}\n`);
        managed.delete(key);
        await this.#write(managed);
      }
    }
    return out;
  }
}
