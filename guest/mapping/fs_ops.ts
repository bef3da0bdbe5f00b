/**
 * The file-system operations that the mapper and the mapping probes need, behind an interface: the Linux guest's
 * own ({@link LinuxFs}: Deno's file API and util-linux `mount`) and an in-memory one for the fake root
 * ({@link MemFs}). Paths are absolute paths of the guest (the root's path included), never relative.
 *
 * @module
 */

/** What `lstat` finds at a path, without following a final link. */
export type NodeKind = "directory" | "file" | "link" | "other";

/** A failed operation, with the errno's name (`EROFS`, `ENOENT`, ...) that the probes report. */
export class FsError extends Error {
  override name = "FsError";
  constructor(readonly code: string, readonly path: string, message?: string) {
    super(message ?? `${code}: ${path}`);
  }
}

/** The errno name of an error a file operation threw (Deno's `code`, or {@link FsError}'s), or null. */
export function errnoOf(e: unknown): string | null {
  if (e instanceof FsError) return e.code;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^E[A-Z0-9]+$/.test(code) ? code : null;
}

/** One row of the mount table. */
export interface MountRow {
  readonly point: string;
  readonly options: string;
}

/** A thread that opens a file for writing, again and again, until it is stopped. */
export interface WriterRace {
  /** Stops the thread: how many opens it tried, and how many opened the watched file itself. */
  stop(): Promise<{ attempts: number; writable: number }>;
}

/** The operations. */
export interface FsOps {
  lstat(path: string): Promise<NodeKind | null>;
  /** Creates one directory (mode 0755); its parent exists. */
  mkdir(path: string): Promise<void>;
  /** Creates an empty regular file; fails if anything is there. */
  createFile(path: string): Promise<void>;
  /** Creates or truncates a file with this text. */
  writeFile(path: string, text: string): Promise<void>;
  readFile(path: string): Promise<string>;
  symlink(target: string, path: string): Promise<void>;
  /** The names in a directory, sorted. */
  readDir(path: string): Promise<string[]>;
  /** Removes a path and what it holds. */
  remove(path: string): Promise<void>;
  /**
   * Attaches `source` (a directory or a regular file) at `target`, of the same kind, nosuid and nodev, and
   * read-only from the first instant when asked: the mount never shows a writable `target`.
   */
  attach(source: string, target: string, readOnly: boolean): Promise<void>;
  /** Unmounts the topmost mount at `target`. */
  detach(target: string): Promise<void>;
  /** Mounts a procfs at `target`. */
  mountProc(target: string): Promise<void>;
  /** The mount table, in its order. */
  mounts(): Promise<MountRow[]>;
  /** Whether the file at `path` (links followed) is the same file as at `other`. */
  sameFile(path: string, other: string): Promise<boolean>;
  /** Starts another thread that opens `path` for writing in a loop and counts the opens that reach `watched`. */
  startWriter(path: string, watched: string): Promise<WriterRace>;
}

/** Paths of the mount table at or below `dir`, in the table's order, relative to `dir` as absolute guest paths. */
export function mountsBelow(rows: readonly MountRow[], dir: string): string[] {
  const out: string[] = [];
  for (const r of rows) {
    if (r.point.startsWith(`${dir}/`)) out.push(r.point.slice(dir.length));
  }
  return out;
}
