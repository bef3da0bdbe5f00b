/**
 * `instance.snapshot` on the `cloud-hypervisor` runtime (seed 000 §The runtimes, Snapshots): a tar of `meta.json`, the
 * overlay flattened onto its base (`qemu-img convert`, after `checkOverlay`), the seed and, with memory,
 * cloud-hypervisor's own snapshot of the paused VM under `ch/` (`config.json`, `state.json`, `memory-ranges`, from
 * `vm.snapshot`); a running VM is paused for it and resumed after. The archive layout, the staging directory, the
 * hashing writer and the refusals are `libvirt-kvm`'s (`runtimes/libvirt/snapshots.ts`, `snapshot_tar.ts`), so a
 * snapshot is read back by the same restore code; `meta.json` names `cloud-hypervisor`, so the other runtime refuses it.
 *
 * @module
 */
import {
  type InstanceSnapshotter,
  SnapshotRefused,
  type StagedSnapshot,
} from "../../core/commands/kind_handlers/instance_snapshot.ts";
import { checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import { flattenDisk } from "../libvirt/disk_tools.ts";
import { SNAPSHOT_META_FILE, type SnapshotMeta } from "../libvirt/snapshot_meta.ts";
import { GPU_MEMORY_SNAPSHOT_REFUSAL, snapshotsDir, VOLUME_MEMORY_SNAPSHOT_REFUSAL } from "../libvirt/snapshots.ts";
import { type TarInput, writeTar } from "../libvirt/snapshot_tar.ts";
import { ChApiError } from "./api_client.ts";
import { CH_RUNTIME, CH_STATE_DIR, type ChRuntime } from "./ch_runtime.ts";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import { SNAPSHOT_FILES } from "./api_types.ts";

/** Options of {@link ChSnapshots}. */
export interface ChSnapshotsOptions {
  readonly runtime: ChRuntime;
  /** The agent's data dir; stages live in `<dataDir>/snapshots`. */
  readonly dataDir: string;
  readonly cpuModel: () => Promise<string>;
  /** Whether the instance's spec attaches a read-write volume (a memory snapshot is refused then). */
  readonly hasWritableVolume?: (id: string) => boolean;
  readonly log?: Logger;
}

const MiB = 1024 * 1024;

/** The snapshot taker of the `cloud-hypervisor` runtime. */
export class ChSnapshots implements InstanceSnapshotter {
  readonly #o: ChSnapshotsOptions;
  readonly dir: string;

  constructor(opts: ChSnapshotsOptions) {
    this.#o = opts;
    this.dir = snapshotsDir(opts.dataDir);
  }

  /** Whether `id` is an instance of this runtime (a `vm.json` of bcd's). */
  async holds(id: string): Promise<boolean> {
    try {
      await this.#o.runtime.recordOf(id);
      return true;
    } catch (e) {
      if (e instanceof RuntimeRefused) return false;
      throw e;
    }
  }

  async take(id: string, includeMemory: boolean, tag: string, signal: AbortSignal): Promise<StagedSnapshot> {
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(tag)) throw new RangeError(`staging tag ${JSON.stringify(tag)} is not a name`);
    const rt = this.#o.runtime;
    let r;
    try {
      r = await rt.recordOf(id);
    } catch (e) {
      if (e instanceof RuntimeRefused) throw new SnapshotRefused("no-instance", `${id}: ${e.message}`);
      throw e;
    }
    const state = await rt.stateOf(id);
    if (includeMemory) {
      if (r.gpus.length > 0) throw new SnapshotRefused("snapshot-refused", GPU_MEMORY_SNAPSHOT_REFUSAL);
      if (this.#o.hasWritableVolume?.(id)) {
        throw new SnapshotRefused("snapshot-refused", VOLUME_MEMORY_SNAPSHOT_REFUSAL);
      }
      if (state === "stopped") {
        throw new SnapshotRefused(
          "snapshot-refused",
          `${id} is stopped: it has no memory state; snapshot its disk only`,
        );
      }
    }
    const cpuModel = includeMemory ? await this.#o.cpuModel() : "";
    const stage = `${this.dir}/upload-${tag}`;
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    await Deno.mkdir(stage, { mode: 0o700 });
    try {
      if (signal.aborted) throw new SnapshotRefused("snapshot-refused", "cancelled before the snapshot began");
      const inst = rt.instanceDir(id);
      const base = r.image ? { path: rt.images.path(r.image.sha256, r.image.format), format: r.image.format } : null;
      try {
        await checkOverlay(`${inst}/disk.qcow2`, base);
      } catch (e) {
        if (e instanceof ImageRefused) {
          throw new SnapshotRefused("snapshot-refused", `${id}: ${e.reason}: ${e.message}`);
        }
        throw e;
      }
      await rt.exclusive(id, state, () => this.#capture(id, state, includeMemory, stage));
      const seed = (r.config.disks ?? []).some((d) => d.path === `${inst}/seed.iso`);
      const meta: SnapshotMeta = {
        format: 1,
        runtime: CH_RUNTIME,
        cpuModel,
        includeMemory,
        vcpus: r.vcpus,
        memoryMiB: r.memoryBytes / MiB,
        seed,
      };
      const tar = `${stage}/snapshot.tar`;
      const inputs: TarInput[] = [
        { name: SNAPSHOT_META_FILE, data: new TextEncoder().encode(JSON.stringify(meta)) },
        { name: "disk.qcow2", path: `${stage}/disk.qcow2` },
        ...(seed ? [{ name: "seed.iso", path: `${inst}/seed.iso` }] : []),
        ...(includeMemory
          ? SNAPSHOT_FILES.map((f) => ({ name: `${CH_STATE_DIR}/${f}`, path: `${stage}/${CH_STATE_DIR}/${f}` }))
          : []),
      ];
      const w = await writeTar(tar, inputs);
      await Deno.remove(`${stage}/disk.qcow2`);
      if (includeMemory) await Deno.remove(`${stage}/${CH_STATE_DIR}`, { recursive: true });
      this.#o.log?.info({ instance: id, bytes: w.size, sha256: w.sha256, memory: includeMemory }, "snapshot staged");
      return { path: tar, size: w.size, sha256: w.sha256, runtime: CH_RUNTIME, includeMemory, cpuModel };
    } catch (e) {
      await Deno.remove(stage, { recursive: true });
      throw e;
    }
  }

  /** The VM paused (when it runs) for cloud-hypervisor's snapshot and the disk's copy; back in `state` after. */
  async #capture(id: string, state: string, includeMemory: boolean, stage: string): Promise<void> {
    const rt = this.#o.runtime;
    const api = rt.api(id);
    const disk = `${rt.instanceDir(id)}/disk.qcow2`;
    const live = state !== "stopped";
    try {
      if (state === "running") await api.pause();
      try {
        if (includeMemory) {
          await Deno.mkdir(`${stage}/${CH_STATE_DIR}`, { mode: 0o700 });
          await api.snapshot(`${stage}/${CH_STATE_DIR}`);
        }
        // A live VMM holds the image's lock; it flushed everything when it paused, so the read shares it (-U).
        await flattenDisk(disk, `${stage}/disk.qcow2`, live);
      } finally {
        if (state === "running") await api.resume();
      }
    } catch (e) {
      if (e instanceof ChApiError) throw new SnapshotRefused("snapshot-refused", `${id}: ${e.message}`);
      throw e;
    }
  }

  async discard(staged: StagedSnapshot): Promise<void> {
    const stage = staged.path.slice(0, staged.path.lastIndexOf("/"));
    if (!stage.startsWith(`${this.dir}/upload-`)) throw new RangeError(`${staged.path} is not a stage of ${this.dir}`);
    await Deno.remove(stage, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}
