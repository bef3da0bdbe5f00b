/**
 * The `libvirt-kvm` half of `restore_from` (000 §The runtimes, "Restores"): the downloaded, verified archive is
 * unpacked into a new directory beside the instances (`instances/.restore-<id>-<random>`), refused when another runtime
 * took it or, with memory, another CPU model (or another vCPU count or memory size), then its disk is checked as a
 * flat qcow2 naming no backing or data file (`checkOverlay` with no base) and its seed is kept as raw (never probed).
 * Only then is the directory renamed to `instances/<id>`; any failure removes it, so no half-restored instance is ever
 * defined. A directory that is already there with its `meta.json` (a define repeated after a crash) is used as it is.
 *
 * @module
 */
import { MEMORY_STATE_FILE } from "../../core/converge/instances/domain_plan.ts";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import type { SnapshotSource } from "../../core/converge/instances/snapshot_source.ts";
import { checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import {
  checkRestore,
  MAX_META_BYTES,
  parseSnapshotMeta,
  SNAPSHOT_META_FILE,
  type SnapshotMeta,
  SnapshotRestoreRefused,
} from "./snapshot_meta.ts";
import { readTar, SnapshotArchiveRefused } from "./snapshot_tar.ts";

/** What {@link unpackSnapshot} needs. */
export interface UnpackRequest {
  /** The verified archive (`snapshots/<sha256>.tar`). */
  readonly archive: string;
  /** `instances/<id>`, which must not exist yet (or be a finished restore of the same). */
  readonly instanceDir: string;
  readonly src: SnapshotSource;
  readonly vcpus: number;
  readonly memoryMiB: number;
  readonly cpuModel: () => Promise<string>;
  /** The runtime that must have taken the snapshot (default `libvirt-kvm`). */
  readonly runtime?: string;
  /**
   * The files a memory snapshot carries, with their size bounds (default libvirt's `memory.save`). A name may sit in
   * one subdirectory (`ch/state.json`), which is made first; all of them are there with memory, none without.
   */
  readonly memoryFiles?: ReadonlyMap<string, number>;
}

/** The largest seed ISO a snapshot may carry. */
export const MAX_SEED_BYTES = 64 * 1024 * 1024;
/** The largest flattened disk a snapshot may carry (64 TiB; the download's own bound comes first). */
export const MAX_DISK_BYTES = 64 * 1024 ** 4;

/** Unpacks and checks the snapshot into the instance's directory; returns its `meta.json`. */
export async function unpackSnapshot(r: UnpackRequest): Promise<SnapshotMeta> {
  const id = r.instanceDir.slice(r.instanceDir.lastIndexOf("/") + 1);
  try {
    const meta = parseSnapshotMeta(await Deno.readFile(`${r.instanceDir}/${SNAPSHOT_META_FILE}`));
    return meta; // unpacked and checked by an earlier define
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw _refusal(id, e);
  }
  const parent = r.instanceDir.slice(0, r.instanceDir.lastIndexOf("/"));
  const tmp = `${parent}/.restore-${id}-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.mkdir(tmp, { mode: 0o700 });
  try {
    // A state is the guest's memory plus QEMU's device state; twice the memory and 1 GiB bound it generously.
    const memory = r.memoryFiles ?? new Map([[MEMORY_STATE_FILE, 2 * r.memoryMiB * 1024 * 1024 + 1024 ** 3]]);
    const allowed = new Map([
      [SNAPSHOT_META_FILE, MAX_META_BYTES],
      ["disk.qcow2", MAX_DISK_BYTES],
      ["seed.iso", MAX_SEED_BYTES],
      ...memory,
    ]);
    for (const name of memory.keys()) {
      const slash = name.indexOf("/");
      if (slash > 0) await Deno.mkdir(`${tmp}/${name.slice(0, slash)}`, { recursive: true, mode: 0o700 });
    }
    const got = await readTar(r.archive, tmp, allowed);
    if (!got.has(SNAPSHOT_META_FILE)) throw new SnapshotArchiveRefused("the archive has no meta.json");
    const meta = parseSnapshotMeta(await Deno.readFile(`${tmp}/${SNAPSHOT_META_FILE}`));
    checkRestore(meta, {
      runtime: r.runtime ?? "libvirt-kvm",
      hostCpuModel: await r.cpuModel(),
      vcpus: r.vcpus,
      memoryMiB: r.memoryMiB,
      refIncludeMemory: r.src.includeMemory,
    });
    const held = [...memory.keys()].filter((n) => got.has(n)).length;
    if (held !== 0 && held !== memory.size) {
      throw new SnapshotArchiveRefused("the archive holds part of a memory state");
    }
    if (meta.includeMemory !== (held === memory.size)) {
      throw new SnapshotArchiveRefused(`meta.json says includeMemory ${meta.includeMemory}; the archive disagrees`);
    }
    if (meta.seed !== got.has("seed.iso")) {
      throw new SnapshotArchiveRefused(`meta.json says seed ${meta.seed}; the archive disagrees`);
    }
    if (!got.has("disk.qcow2")) throw new SnapshotArchiveRefused("the archive has no disk.qcow2");
    await checkOverlay(`${tmp}/disk.qcow2`, null);
    await Deno.rename(tmp, r.instanceDir);
    return meta;
  } catch (e) {
    await Deno.remove(tmp, { recursive: true });
    throw _refusal(id, e);
  }
}

/** A refusal of the archive as the instance's {@link RuntimeRefused}; anything else as it is. */
function _refusal(id: string, e: unknown): unknown {
  if (e instanceof SnapshotArchiveRefused) return new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
  if (e instanceof SnapshotRestoreRefused) return new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
  if (e instanceof ImageRefused) {
    return new RuntimeRefused(e.reason, `${id}: snapshot disk: ${e.message}`, { cause: e });
  }
  if (e instanceof Deno.errors.AlreadyExists) {
    return new RuntimeRefused("bad-snapshot", `${id}: the instance directory exists without a snapshot's meta.json`);
  }
  return e;
}
