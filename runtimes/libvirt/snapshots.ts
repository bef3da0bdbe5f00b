/**
 * `instance.snapshot` on the `libvirt-kvm` runtime (000 §The runtimes, "Snapshots"): a tar of `meta.json` (runtime, CPU
 * model, `includeMemory`, the domain's shape), the overlay flattened onto its base (`qemu-img convert`, after
 * `checkOverlay`), the seed and, with memory, the state `virsh save` wrote (through the helper's `libvirt.save`), after
 * which the domain carries on from that state (`libvirt.restore`: `virsh restore --xml` of root's own rendering of the
 * domain's plan). A disk-only snapshot of a running domain pauses it for the copy and resumes it after. The domain is
 * back in its state before the archive is written, so its downtime is the save and the copy of its disk.
 *
 * Everything is staged under `data_dir/snapshots/upload-<command id>/` (the data disk, never a tmpfs) and the archive
 * is hashed while it is written. {@link LibvirtSnapshots.discard} removes the stage; {@link cleanStaging} removes
 * stages a crash left behind (`instance.snapshot` is not retry-safe, so an interrupted one is never run again).
 *
 * Refusals ({@link SnapshotRefused}): a memory snapshot of an instance with passthrough GPUs or a read-write volume
 * (the seed's messages), of a stopped instance (no memory to save), an unknown or foreign instance (`no-instance`), a
 * disk that fails `checkOverlay`.
 *
 * @module
 */
import {
  type InstanceSnapshotter,
  SnapshotRefused,
  type StagedSnapshot,
} from "../../core/commands/kind_handlers/instance_snapshot.ts";
import type { DomainPlan, HostOutcome, LibvirtHostPort } from "../../core/converge/instances/domain_plan.ts";
import { MEMORY_STATE_FILE } from "../../core/converge/instances/domain_plan.ts";
import { checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import { flattenDisk } from "./disk_tools.ts";
import { LIBVIRT_RUNTIME, type LibvirtRuntime } from "./libvirt_runtime.ts";
import { SNAPSHOT_META_FILE, type SnapshotMeta } from "./snapshot_meta.ts";
import { type TarInput, writeTar } from "./snapshot_tar.ts";

/** The seed's refusal of a memory snapshot beside passthrough GPUs (be4de2a). */
export const GPU_MEMORY_SNAPSHOT_REFUSAL =
  "an instance with passthrough GPUs cannot be snapshotted with its memory; snapshot its disk only";
/** The seed's refusal of a memory snapshot beside a read-write volume (550da91). */
export const VOLUME_MEMORY_SNAPSHOT_REFUSAL =
  "ErrMemorySnapshotWithVolumes: an instance with a read-write volume cannot be snapshotted with its memory; snapshot its disk only";

/** Options of {@link LibvirtSnapshots}. */
export interface LibvirtSnapshotsOptions {
  readonly runtime: LibvirtRuntime;
  readonly host: LibvirtHostPort;
  /** The agent's data dir; stages live in `<dataDir>/snapshots`. */
  readonly dataDir: string;
  /** The host CPU model (the inventory's), recorded for a memory snapshot. */
  readonly cpuModel: () => Promise<string>;
  /** Whether the instance's spec attaches a read-write volume (a memory snapshot is refused then). */
  readonly hasWritableVolume?: (id: string) => boolean;
  readonly log?: Logger;
}

function _refusal(o: HostOutcome, id: string): void {
  if (o.refused) throw new SnapshotRefused("snapshot-refused", `${id}: ${o.refused.reason}: ${o.refused.message}`);
}

/** The directory stages and downloads live in. */
export function snapshotsDir(dataDir: string): string {
  return `${dataDir}/snapshots`;
}

/** The snapshot taker of the `libvirt-kvm` runtime. */
export class LibvirtSnapshots implements InstanceSnapshotter {
  readonly #o: LibvirtSnapshotsOptions;
  readonly dir: string;

  constructor(opts: LibvirtSnapshotsOptions) {
    this.#o = opts;
    this.dir = snapshotsDir(opts.dataDir);
  }

  async take(id: string, includeMemory: boolean, tag: string, signal: AbortSignal): Promise<StagedSnapshot> {
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(tag)) throw new RangeError(`staging tag ${JSON.stringify(tag)} is not a name`);
    const d = (await this.#o.host.list()).find((x) => x.name === id);
    if (!d) throw new SnapshotRefused("no-instance", `no instance ${id} on this host`);
    if (!d.plan) throw new SnapshotRefused("no-instance", `domain ${id} is not bcd's; never touched`);
    const plan = d.plan;
    if (includeMemory) {
      if (plan.gpus.length > 0) throw new SnapshotRefused("snapshot-refused", GPU_MEMORY_SNAPSHOT_REFUSAL);
      if (this.#o.hasWritableVolume?.(id)) {
        throw new SnapshotRefused("snapshot-refused", VOLUME_MEMORY_SNAPSHOT_REFUSAL);
      }
      if (d.state === "stopped") {
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
      const inst = this.#o.runtime.instanceDir(id);
      const entries = await this.#o.runtime.exclusive(
        id,
        d.state,
        () => this.#capture(plan, d.state, includeMemory, stage),
      );
      const meta: SnapshotMeta = {
        format: 1,
        runtime: LIBVIRT_RUNTIME,
        cpuModel,
        includeMemory,
        vcpus: plan.vcpus,
        memoryMiB: plan.memoryMiB,
        seed: plan.seed,
      };
      const tar = `${stage}/snapshot.tar`;
      const inputs: TarInput[] = [
        { name: SNAPSHOT_META_FILE, data: new TextEncoder().encode(JSON.stringify(meta)) },
        { name: "disk.qcow2", path: entries.disk },
        ...(plan.seed ? [{ name: "seed.iso", path: `${inst}/seed.iso` }] : []),
        ...(entries.memory ? [{ name: MEMORY_STATE_FILE, path: entries.memory }] : []),
      ];
      const w = await writeTar(tar, inputs);
      await Deno.remove(entries.disk);
      if (entries.memory) await Deno.remove(entries.memory);
      this.#o.log?.info({ instance: id, bytes: w.size, sha256: w.sha256, memory: includeMemory }, "snapshot staged");
      return { path: tar, size: w.size, sha256: w.sha256, runtime: LIBVIRT_RUNTIME, includeMemory, cpuModel };
    } catch (e) {
      await Deno.remove(stage, { recursive: true });
      if (includeMemory) {
        await Deno.remove(`${this.#o.runtime.instanceDir(id)}/${MEMORY_STATE_FILE}`).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
      }
      throw e;
    }
  }

  /** Captures the disk (and memory) with the domain held; it is back in `state` when this returns. */
  async #capture(
    plan: DomainPlan,
    state: "running" | "paused" | "stopped",
    includeMemory: boolean,
    stage: string,
  ): Promise<{ disk: string; memory?: string }> {
    const id = plan.id;
    const inst = this.#o.runtime.instanceDir(id);
    const disk = `${stage}/disk.qcow2`;
    const base = plan.image && plan.image.format !== "iso"
      ? { path: this.#o.runtime.images.path(plan.image.sha256, plan.image.format), format: plan.image.format }
      : null;
    try {
      await checkOverlay(`${inst}/disk.qcow2`, base);
    } catch (e) {
      if (e instanceof ImageRefused) throw new SnapshotRefused("snapshot-refused", `${id}: ${e.reason}: ${e.message}`);
      throw e;
    }
    if (includeMemory) {
      _refusal(await this.#o.host.save(id), id);
      try {
        await flattenDisk(`${inst}/disk.qcow2`, disk);
      } finally {
        _refusal(await this.#o.host.restore(id, state === "paused"), id);
      }
      // Into the stage while the instance is still held: a state left in the instance's directory would be taken for
      // a restore's first start by the next start of this instance (both live under the data dir, one filesystem).
      await Deno.rename(`${inst}/${MEMORY_STATE_FILE}`, `${stage}/${MEMORY_STATE_FILE}`);
      return { disk, memory: `${stage}/${MEMORY_STATE_FILE}` };
    }
    if (state === "running") {
      _refusal(await this.#o.host.suspend(id), id);
      try {
        await flattenDisk(`${inst}/disk.qcow2`, disk, true);
      } finally {
        _refusal(await this.#o.host.resume(id), id);
      }
    } else {
      await flattenDisk(`${inst}/disk.qcow2`, disk, state === "paused");
    }
    return { disk };
  }

  async discard(staged: StagedSnapshot): Promise<void> {
    const stage = staged.path.slice(0, staged.path.lastIndexOf("/"));
    if (!stage.startsWith(`${this.dir}/upload-`)) throw new RangeError(`${staged.path} is not a stage of ${this.dir}`);
    await Deno.remove(stage, { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}

/**
 * Removes what a crash left in `dir`: upload stages (`upload-*`), partial downloads (`.partial-*`) and half-unpacked
 * restores (`.restore-*`, in the instances directory), leaving the names in `keep` (stages of commands running now).
 * Returns what it removed.
 */
export async function cleanStaging(dir: string, keep: ReadonlySet<string> = new Set()): Promise<string[]> {
  const removed: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const leftover = ["upload-", ".partial-", ".restore-"].some((p) => e.name.startsWith(p));
      if (!leftover || keep.has(e.name)) continue;
      await Deno.remove(`${dir}/${e.name}`, { recursive: true });
      removed.push(e.name);
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return removed.sort();
}
