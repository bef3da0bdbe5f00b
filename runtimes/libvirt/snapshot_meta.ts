/**
 * A snapshot's `meta.json` (000 §The runtimes: "runtime, CPU model, `includeMemory`") and the checks a restore makes
 * before anything of the archive is used: the runtime that took it must be this one, a memory snapshot must come from
 * this host's CPU model, and the `SnapshotRef` the spec names must agree with the archive. The domain's shape (vCPUs,
 * memory) travels too, so a memory restore into another shape is refused here rather than by QEMU mid-load.
 *
 * @module
 */

/** The file name inside the archive. */
export const SNAPSHOT_META_FILE = "meta.json";
/** The most bytes `meta.json` may have. */
export const MAX_META_BYTES = 64 * 1024;

/** `meta.json`. */
export interface SnapshotMeta {
  readonly format: 1;
  readonly runtime: string;
  readonly cpuModel: string;
  readonly includeMemory: boolean;
  readonly vcpus: number;
  readonly memoryMiB: number;
  /** Whether the archive carries the instance's NoCloud seed. */
  readonly seed: boolean;
}

/** A snapshot a restore refuses, with the reason. */
export class SnapshotRestoreRefused extends Error {
  override name = "SnapshotRestoreRefused";
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

const _KEYS = ["format", "runtime", "cpuModel", "includeMemory", "vcpus", "memoryMiB", "seed"];

/** Parses `meta.json` strictly: exactly its fields, each of its type. */
export function parseSnapshotMeta(bytes: Uint8Array): SnapshotMeta {
  const bad = (why: string) => new SnapshotRestoreRefused("bad-snapshot", `meta.json ${why}`);
  if (bytes.length > MAX_META_BYTES) throw bad(`is ${bytes.length} bytes, more than ${MAX_META_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    if (e instanceof SyntaxError || e instanceof TypeError) throw bad("is not JSON");
    throw e;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw bad("is not an object");
  const o = v as Record<string, unknown>;
  const extra = Object.keys(o).find((k) => !_KEYS.includes(k));
  if (extra !== undefined) throw bad(`has an unknown field ${JSON.stringify(extra)}`);
  if (o.format !== 1) throw bad(`format ${JSON.stringify(o.format)} is not 1`);
  if (typeof o.runtime !== "string" || typeof o.cpuModel !== "string") throw bad("lacks runtime or cpuModel");
  if (typeof o.includeMemory !== "boolean" || typeof o.seed !== "boolean") throw bad("lacks includeMemory or seed");
  for (const k of ["vcpus", "memoryMiB"] as const) {
    if (typeof o[k] !== "number" || !Number.isSafeInteger(o[k]) || (o[k] as number) < 1) {
      throw bad(`${k} ${JSON.stringify(o[k])} is not a positive integer`);
    }
  }
  return o as unknown as SnapshotMeta;
}

/** What the spec asks of a restore, and what this host is. */
export interface RestoreTarget {
  readonly runtime: string;
  readonly hostCpuModel: string;
  readonly vcpus: number;
  readonly memoryMiB: number;
  /** The spec's `SnapshotRef.include_memory`. */
  readonly refIncludeMemory: boolean;
}

/** The seed's restore refusals, in order; throws {@link SnapshotRestoreRefused}. */
export function checkRestore(meta: SnapshotMeta, t: RestoreTarget): void {
  if (meta.runtime !== t.runtime) {
    throw new SnapshotRestoreRefused(
      "snapshot-runtime",
      `the snapshot was taken by runtime ${JSON.stringify(meta.runtime)}, not ${JSON.stringify(t.runtime)}`,
    );
  }
  if (meta.includeMemory !== t.refIncludeMemory) {
    throw new SnapshotRestoreRefused(
      "bad-snapshot",
      `the spec says include_memory ${t.refIncludeMemory}, the snapshot ${meta.includeMemory}`,
    );
  }
  if (!meta.includeMemory) return;
  if (meta.cpuModel !== t.hostCpuModel) {
    throw new SnapshotRestoreRefused(
      "snapshot-cpu-model",
      `a memory snapshot from CPU model ${JSON.stringify(meta.cpuModel)} cannot restore on ${
        JSON.stringify(t.hostCpuModel)
      }`,
    );
  }
  if (meta.vcpus !== t.vcpus || meta.memoryMiB !== t.memoryMiB) {
    throw new SnapshotRestoreRefused(
      "snapshot-shape",
      `a memory snapshot of ${meta.vcpus} vCPUs and ${meta.memoryMiB} MiB cannot restore into ${t.vcpus} vCPUs and ${t.memoryMiB} MiB`,
    );
  }
}
