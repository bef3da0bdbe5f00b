/**
 * An in-memory {@link FsOps} for the fake root: directories, files and symbolic links, with a mount table of
 * binds (read-only, nosuid, nodev) and procfs-like trees whose magic links are plain links, as `lstat` shows them.
 * Paths resolve component by component, following links (absolute or relative, 40 at most) and entering the
 * topmost mount at each path. Each node remembers whether it came from the image's layers (`lower`), so the fake
 * root can tell what its upper holds.
 *
 * @module
 */
import { FsError, type FsOps, type MountRow, type NodeKind, type WriterRace } from "./fs_ops.ts";

/** A node of the tree. */
export type MemNode =
  | { kind: "directory"; entries: Map<string, MemNode>; lower: boolean }
  | { kind: "file"; data: string; lower: boolean }
  | { kind: "link"; target: string; lower: boolean };

interface MemMount {
  readonly point: string;
  readonly node: MemNode;
  readonly readOnly: boolean;
  readonly options: string;
}

interface Resolved {
  readonly node: MemNode;
  readonly readOnly: boolean;
  readonly real: string;
}

type MemDir = Extract<MemNode, { kind: "directory" }>;

const dir = (lower = false): MemDir => ({ kind: "directory", entries: new Map(), lower });

function split(path: string): { parent: string; name: string } {
  const i = path.lastIndexOf("/");
  return { parent: i <= 0 ? "/" : path.slice(0, i), name: path.slice(i + 1) };
}

/** Runs `f` as an operation: what it throws becomes a rejection. */
function settle<T>(f: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(f());
  } catch (e) {
    return Promise.reject(e);
  }
}

/** The in-memory file system. */
export class MemFs implements FsOps {
  readonly top: MemNode = dir(true);
  readonly #mounts: MemMount[] = [];

  constructor(readonly opts: { pid?: number } = {}) {}

  #resolve(path: string, followLast: boolean, depth = 0): Resolved {
    if (depth > 40) throw new FsError("ELOOP", path);
    const comps = path.split("/").filter((c) => c !== "" && c !== ".");
    let node = this.top;
    let real = "";
    let readOnly = false;
    for (let i = 0; i < comps.length; i++) {
      const c = comps[i]!;
      const rest = comps.slice(i + 1).join("/");
      if (c === "..") return this.#resolve(`${split(real || "/").parent}/${rest}`, followLast, depth + 1);
      if (node.kind !== "directory") throw new FsError("ENOTDIR", real);
      const child = node.entries.get(c);
      if (child === undefined) throw new FsError("ENOENT", `${real}/${c}`);
      const p = `${real}/${c}`;
      const mount = this.#mounts.findLast((m) => m.point === p);
      const next = mount?.node ?? child;
      if (mount) readOnly = mount.readOnly;
      if (next.kind === "link" && (i < comps.length - 1 || followLast)) {
        const to = next.target.startsWith("/") ? next.target : `${real}/${next.target}`;
        return this.#resolve(`${to}/${rest}`, followLast, depth + 1);
      }
      node = next;
      real = p;
    }
    return { node, readOnly, real: real || "/" };
  }

  #find(path: string, followLast: boolean): Resolved | null {
    try {
      return this.#resolve(path, followLast);
    } catch (e) {
      if (e instanceof FsError && e.code === "ENOENT") return null;
      throw e;
    }
  }

  /** The directory that will hold `path`'s last component, writable. */
  #parent(path: string): { entries: Map<string, MemNode>; name: string; real: string } {
    const { parent, name } = split(path);
    const p = this.#resolve(parent, true);
    if (p.node.kind !== "directory") throw new FsError("ENOTDIR", parent);
    if (p.readOnly) throw new FsError("EROFS", path);
    return { entries: p.node.entries, name, real: p.real === "/" ? `/${name}` : `${p.real}/${name}` };
  }

  #add(path: string, node: MemNode): void {
    const p = this.#parent(path);
    if (p.entries.has(p.name)) throw new FsError("EEXIST", path);
    p.entries.set(p.name, node);
  }

  /** Adds a node of the image's layers (test setup), creating its parents. */
  seed(path: string, node: MemNode): void {
    let cur = this.top;
    const comps = path.split("/").filter((c) => c !== "");
    for (const c of comps.slice(0, -1)) {
      if (cur.kind !== "directory") throw new FsError("ENOTDIR", path);
      let next = cur.entries.get(c);
      if (next === undefined) cur.entries.set(c, next = dir(node.lower));
      cur = next;
    }
    if (cur.kind !== "directory") throw new FsError("ENOTDIR", path);
    cur.entries.set(comps.at(-1)!, node);
  }

  /** The node at `path`, links followed, or null. */
  node(path: string): MemNode | null {
    return this.#find(path, true)?.node ?? null;
  }

  lstat(path: string): Promise<NodeKind | null> {
    return settle(() => {
      const r = this.#find(path, false);
      return r === null ? null : r.node.kind;
    });
  }

  mkdir(path: string): Promise<void> {
    return settle(() => {
      this.#add(path, dir());
    });
  }

  createFile(path: string): Promise<void> {
    return settle(() => {
      this.#add(path, { kind: "file", data: "", lower: false });
    });
  }

  writeFile(path: string, text: string): Promise<void> {
    return settle(() => {
      const r = this.#find(path, true);
      if (r === null) {
        this.#add(path, { kind: "file", data: text, lower: false });
        return;
      }
      if (r.node.kind === "directory") throw new FsError("EISDIR", path);
      if (r.readOnly) throw new FsError("EROFS", path);
      if (r.node.kind === "file") {
        r.node.data = text;
        r.node.lower = false;
      }
    });
  }

  readFile(path: string): Promise<string> {
    return settle(() => {
      const r = this.#resolve(path, true);
      if (r.node.kind !== "file") throw new FsError("EISDIR", path);
      return r.node.data;
    });
  }

  symlink(target: string, path: string): Promise<void> {
    return settle(() => {
      this.#add(path, { kind: "link", target, lower: false });
    });
  }

  readDir(path: string): Promise<string[]> {
    return settle(() => {
      const r = this.#resolve(path, true);
      if (r.node.kind !== "directory") throw new FsError("ENOTDIR", path);
      return [...r.node.entries.keys()].sort();
    });
  }

  remove(path: string): Promise<void> {
    return settle(() => {
      const p = this.#parent(path);
      if (!p.entries.has(p.name)) throw new FsError("ENOENT", path);
      if (this.#mounts.some((m) => m.point === p.real || m.point.startsWith(`${p.real}/`))) {
        throw new FsError("EBUSY", path);
      }
      p.entries.delete(p.name);
    });
  }

  #point(target: string): string {
    const { parent, name } = split(target);
    const real = this.#resolve(parent, true).real;
    return real === "/" ? `/${name}` : `${real}/${name}`;
  }

  attach(source: string, target: string, readOnly: boolean): Promise<void> {
    return settle(() => {
      const s = this.#resolve(source, true);
      const t = this.#resolve(target, true);
      if (s.node.kind !== t.node.kind) throw new FsError(t.node.kind === "directory" ? "ENOTDIR" : "EISDIR", target);
      const options = `${readOnly ? "ro" : "rw"},nosuid,nodev,relatime`;
      this.#mounts.push({ point: this.#point(target), node: s.node, readOnly, options });
    });
  }

  detach(target: string): Promise<void> {
    return settle(() => {
      const point = this.#point(target);
      const i = this.#mounts.findLastIndex((m) => m.point === point);
      if (i < 0) throw new FsError("EINVAL", target, `${target} is no mount point`);
      if (this.#mounts.slice(i + 1).some((m) => m.point.startsWith(`${point}/`))) throw new FsError("EBUSY", target);
      this.#mounts.splice(i, 1);
    });
  }

  mountProc(target: string): Promise<void> {
    return settle(() => {
      const pid = String(this.opts.pid ?? 1);
      const link = (to: string): MemNode => ({ kind: "link", target: to, lower: false });
      const proc = dir();
      const process = dir();
      const fd = dir();
      const task = dir();
      fd.entries.set("0", link("/dev/null"));
      task.entries.set(pid, dir());
      process.entries.set("root", link("/"));
      process.entries.set("cwd", link("/"));
      process.entries.set("fd", fd);
      process.entries.set("task", task);
      proc.entries.set("self", link(pid));
      proc.entries.set("thread-self", link(`${pid}/task/${pid}`));
      proc.entries.set(pid, process);
      this.#resolve(target, true);
      this.#mounts.push({ point: this.#point(target), node: proc, readOnly: false, options: "rw,nosuid,nodev,noexec" });
    });
  }

  mounts(): Promise<MountRow[]> {
    return settle(() => this.#mounts.map((m) => ({ point: m.point, options: m.options })));
  }

  sameFile(path: string, other: string): Promise<boolean> {
    return settle(() => this.#resolve(path, true).node === this.#resolve(other, true).node);
  }

  startWriter(path: string, watched: string): Promise<WriterRace> {
    return settle(() => {
      const target = this.#resolve(watched, true).node;
      let stopped = false;
      let attempts = 0;
      let writable = 0;
      const loop = (async () => {
        while (!stopped) {
          attempts++;
          const r = this.#find(path, true);
          if (r !== null && !r.readOnly && r.node === target) writable++;
          await new Promise((res) => setTimeout(res, 0));
        }
      })();
      return {
        async stop() {
          stopped = true;
          await loop;
          return { attempts, writable };
        },
      };
    });
  }
}
