/**
 * The mapper (seed 002 §Probes, worker::mapping: `mappings::Mapper` and `root::Root::map`): it maps a source, a
 * directory or a regular file, at a target beneath a root, as a bind mount that is nosuid and nodev, and
 * read-only from its first instant when asked. It walks the target's components from the root without following
 * any link, and refuses:
 *
 * - `target`: a target that is not absolute and canonical (not /, no empty, `.` or `..` component);
 * - `reserved`: a target that lands on, hides, or lies below a path of its reserved set (checked first, so a
 *   refused target creates nothing);
 * - `link`: a symbolic link, a procfs magic link included, at any component, named by its path;
 * - `target-kind`: a component that is no directory, or a last component of another kind than the source;
 * - `nested`: a target that it would have to create inside one of its own earlier mappings, where the creation
 *   would reach that mapping's source;
 * - `source`: a source that is neither a directory nor a regular file;
 * - `mount`: a mount that failed.
 *
 * It creates the target's missing components on the root (directories, and an empty file for a file's target),
 * then attaches. {@link RootMapper} is the root's own: the container root's reserved set, and a latch, so that
 * after a mapping that it refused or failed it refuses every later one (`latched`).
 *
 * @module
 */
import { type FsOps, type NodeKind } from "./fs_ops.ts";
import { CONTAINER_ROOT_RESERVED, reservedConflict, type ReservedSet } from "./reserved.ts";

/** Why a mapper refused a mapping. */
export type RefusalKind = "target" | "reserved" | "link" | "target-kind" | "nested" | "source" | "mount" | "latched";

/** A refused or failed mapping: the kind, and the path that it names, if any. */
export class MapRefused extends Error {
  override name = "MapRefused";
  constructor(readonly kind: RefusalKind, readonly path: string | null, detail?: string) {
    super([kind, path, detail ? `(${detail})` : null].filter((s) => s !== null).join(" "));
  }
}

/** One mapping: the source's absolute path in the guest, the target's in the root. */
export interface MapRequest {
  readonly source: string;
  readonly target: string;
  readonly readOnly: boolean;
}

/** Whether `p` is an absolute canonical path other than /. */
export function isCanonicalTarget(p: string): boolean {
  if (!p.startsWith("/") || p === "/" || p.includes("\0")) return false;
  return p.slice(1).split("/").every((c) => c !== "" && c !== "." && c !== "..");
}

/** A mapper beneath one root, with its reserved set; it remembers its mappings and tears them down. */
export class Mapper {
  readonly #targets: string[] = [];

  /** `root` is the root's path in the guest; targets are absolute paths in the root. */
  constructor(readonly fs: FsOps, readonly root: string, readonly reserved: ReservedSet) {}

  /** The targets of the mappings it applied, in order. */
  get targets(): readonly string[] {
    return this.#targets;
  }

  /** Applies one mapping, or throws {@link MapRefused}. */
  async map(m: MapRequest): Promise<void> {
    if (!isCanonicalTarget(m.target)) throw new MapRefused("target", m.target);
    const reserved = reservedConflict(this.reserved, m.target);
    if (reserved !== null) throw new MapRefused("reserved", m.target);
    const kind = await this.fs.lstat(m.source);
    if (kind !== "directory" && kind !== "file") throw new MapRefused("source", m.source);
    const comps = m.target.slice(1).split("/");
    const missing = await this.#walk(comps, kind);
    if (missing >= 0) {
      const parent = `/${comps.slice(0, missing).join("/")}`;
      const inside = this.#targets.find((t) => parent === t || parent.startsWith(`${t}/`));
      if (inside !== undefined) throw new MapRefused("nested", m.target);
      for (let i = missing; i < comps.length; i++) {
        const host = this.#host(comps.slice(0, i + 1));
        try {
          if (i < comps.length - 1 || kind === "directory") await this.fs.mkdir(host);
          else await this.fs.createFile(host);
        } catch (e) {
          throw new MapRefused("mount", m.target, `creating ${host}: ${e instanceof Error ? e.message : e}`);
        }
      }
    }
    try {
      await this.fs.attach(m.source, this.#host(comps), m.readOnly);
    } catch (e) {
      throw new MapRefused("mount", m.target, e instanceof Error ? e.message : String(e));
    }
    this.#targets.push(m.target);
  }

  /** Checks the existing components; returns the index of the first missing one, or -1. */
  async #walk(comps: string[], kind: NodeKind): Promise<number> {
    for (let i = 0; i < comps.length; i++) {
      const guest = `/${comps.slice(0, i + 1).join("/")}`;
      const k = await this.fs.lstat(this.#host(comps.slice(0, i + 1)));
      if (k === null) return i;
      if (k === "link") throw new MapRefused("link", guest);
      const last = i === comps.length - 1;
      if ((!last && k !== "directory") || (last && k !== kind)) throw new MapRefused("target-kind", guest);
    }
    return -1;
  }

  #host(comps: readonly string[]): string {
    return `${this.root}/${comps.join("/")}`;
  }

  /** Unmounts its mappings, the latest first; stops at the first that fails, which it keeps. */
  async teardown(): Promise<void> {
    while (this.#targets.length > 0) {
      const t = this.#targets.at(-1)!;
      await this.fs.detach(`${this.root}${t}`);
      this.#targets.pop();
    }
  }
}

/** The root's mapper: the container root's reserved set, and the latch. */
export class RootMapper {
  readonly mapper: Mapper;
  #latched = false;

  constructor(fs: FsOps, root: string, reserved: ReservedSet = CONTAINER_ROOT_RESERVED) {
    this.mapper = new Mapper(fs, root, reserved);
  }

  /** Whether a refused or failed mapping latched the root. */
  get latched(): boolean {
    return this.#latched;
  }

  /** Applies a table in order; the first refusal latches the root and ends the table. Returns when all applied. */
  async map(table: readonly MapRequest[]): Promise<void> {
    for (const m of table) {
      if (this.#latched) throw new MapRefused("latched", null);
      try {
        await this.mapper.map(m);
      } catch (e) {
        this.#latched = true;
        throw e;
      }
    }
  }
}
