/**
 * The `libvirt-kvm` instance runtime (seed 000 §The runtimes), the node's half: it prepares an instance's files in
 * its own `<data dir>/libvirt` (the base image through {@link ImageStore}, the `qemu-img create -u` overlay, the
 * NoCloud seed ISO) and asks a {@link LibvirtHostPort} (the root helper's `libvirt.*` ops, or {@link LibvirtHost} in
 * process) for everything libvirt does. It never builds XML and never sends a path.
 *
 * States: `start` (or `start --paused`), `suspend` and `resume`; a stop is `shutdown`, then `destroy` once
 * {@link LibvirtRuntimeOptions.shutdownGraceMs} (60 s) passed without the guest powering off; a delete destroys,
 * undefines and removes the instance's directory. A root disk grows (`qemu-img resize` stopped, `blockresize`
 * running); a smaller size fails the instance. Volumes (000 §Persistent volumes) are in the plan at define, numbered
 * `vdb` onward in spec order; `setVolumes` redefines a stopped domain with its new list and hot-plugs a running or
 * paused one (`libvirt.detach_disk`, then `libvirt.attach_disk`: root names the files and picks the devices);
 * `growVolume` is `libvirt.blockresize` of that volume. A refusal of the host side (a bad image, a foreign domain, a start
 * libvirt refused for lack of memory) is a {@link RuntimeRefused} carrying its reason; anything else is thrown as
 * is and retried next pass.
 *
 * @module
 */
import { InstanceHolds } from "../instance_holds.ts";
import {
  type DomainPlan,
  type HostOutcome,
  type LibvirtHostPort,
  MEMORY_STATE_FILE,
  type PlanVolume,
  REBIND_DISK,
} from "../../core/converge/instances/domain_plan.ts";
import { attachmentDev, type VolumeAttachment } from "../../core/volumes/grammar.ts";
import {
  DetachPending,
  type Domain,
  type DomainRecord,
  type DomainState,
  type InstanceRuntime,
  RuntimeRefused,
} from "../../core/converge/instances/runtime.ts";
import { checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import { INSTANCE_ID } from "../../core/converge/instances/domain_plan.ts";
import { parseQcow2Header, readQcow2Prefix } from "../../core/images/qcow2_header.ts";
import type { Logger } from "../../core/log/mod.ts";
import { baseVirtualSize, buildSeedIso, createOverlay, overlayBase, resizeDisk } from "./disk_tools.ts";
import { ensureChannelKey } from "./channel_key.ts";
import { ImageFetchRefused, ImageStore } from "./image_store.ts";
import { unpackSnapshot } from "./snapshot_restore.ts";
import type { SnapshotStore } from "./snapshot_store.ts";
import { type Clock, realClock } from "../../core/clock.ts";
import { type BalloonReading, NoBalloon } from "../../core/balloon/port.ts";
import { rebindFileDisk, runRebind } from "../../core/rebind/mod.ts";
import { LIBVIRT_RUNTIME } from "../runtime_names.ts";

/** The runtime's name in `InstanceSpec.runtime`. */
export { LIBVIRT_RUNTIME };

/** Options of {@link LibvirtRuntime}. */
export interface LibvirtRuntimeOptions {
  readonly host: LibvirtHostPort;
  /** The agent's data dir; files live under `<dataDir>/libvirt`. */
  readonly dataDir: string;
  readonly fetch?: typeof fetch;
  /** How long a stop waits for the guest to power off before `destroy` (default 60 s). */
  readonly shutdownGraceMs?: number;
  /** The clock a stop's shutdown grace runs on, polling the domain's state each second (default the real clock). */
  readonly clock?: Pick<Clock, "monotonic" | "sleep">;
  /** The downloaded snapshots `restore_from` boots from; without it such an instance is refused. */
  readonly snapshots?: SnapshotStore;
  /** The host CPU model (the inventory's): a memory snapshot restores only on the model it was taken on. */
  readonly cpuModel?: () => Promise<string>;
  readonly log?: Logger;
}

const MiB = 1024 * 1024;

/** The plan's volumes of `atts`, numbered `vdb` onward in their order. */
function _numbered(atts: readonly VolumeAttachment[] | undefined): PlanVolume[] {
  return (atts ?? []).map((a, n) => ({
    id: a.volumeId,
    serial: a.serial,
    readOnly: a.readOnly,
    dev: attachmentDev(n),
  }));
}

function _same(p: PlanVolume, a: VolumeAttachment): boolean {
  return p.id === a.volumeId && p.serial === a.serial && p.readOnly === a.readOnly;
}

/** A hot-unplug the guest has not acknowledged yet is retried next pass, not a failure of the instance. */
function _checkDetach(o: HostOutcome, id: string): void {
  if (o.refused?.reason === "detach-pending") throw new DetachPending(`${id}: ${o.refused.message}`);
  _check(o, id);
}

function _check(o: HostOutcome, id: string): void {
  if (o.refused) throw new RuntimeRefused(o.refused.reason, `${id}: ${o.refused.message}`);
}

/** The runtime. */
export class LibvirtRuntime implements InstanceRuntime {
  readonly name = LIBVIRT_RUNTIME;
  readonly images: ImageStore;
  readonly #o: LibvirtRuntimeOptions;
  readonly #dir: string;
  /** Instances a snapshot holds: the state they had when it began, and when it ends. */
  readonly #holds = new InstanceHolds();

  constructor(opts: LibvirtRuntimeOptions) {
    this.#o = opts;
    this.#dir = `${opts.dataDir}/libvirt`;
    this.images = new ImageStore({ dir: `${this.#dir}/images`, fetch: opts.fetch });
  }

  /** The instance's directory. */
  instanceDir(id: string): string {
    return `${this.#dir}/instances/${id}`;
  }

  /**
   * Runs `f` while nothing else acts on instance `id`: the converger's verbs on it wait until `f` ends, and the listing
   * shows the state it had when `f` began (a memory snapshot shuts the domain off for a moment; no pass may boot it
   * then). `state` is that state.
   */
  exclusive<T>(id: string, state: DomainState, f: () => Promise<T>): Promise<T> {
    return this.#holds.exclusive(id, state, f);
  }

  async list(): Promise<Domain[]> {
    return (await this.#o.host.list()).map((d) => ({
      id: d.name,
      state: this.#holds.stateOf(d.name) ?? d.state,
      record: d.plan === undefined ? undefined : {
        id: d.plan.id,
        allocationId: d.plan.allocationId,
        vcpus: d.plan.vcpus,
        memoryBytes: d.plan.memoryMiB * MiB,
        imageSha256: d.plan.image?.sha256 ?? "",
        gpus: d.plan.gpus.map((g) => g.uuid),
        ...(d.plan.volumes?.length
          ? { volumes: d.plan.volumes.map((v) => ({ volumeId: v.id, serial: v.serial, readOnly: v.readOnly })) }
          : {}),
        ...(d.plan.placement && d.plan.placement.hugepages !== "none" ? { hugepages: d.plan.placement.hugepages } : {}),
      },
    }));
  }

  async define(record: DomainRecord): Promise<void> {
    const id = record.id;
    if (!INSTANCE_ID.test(id)) {
      throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    }
    const l = record.launch;
    if (!l) {
      throw new RuntimeRefused("invalid-spec", `${id}: the libvirt-kvm runtime needs the instance's image and disks`);
    }
    if (record.memoryBytes % MiB !== 0 || record.memoryBytes < MiB) {
      throw new RuntimeRefused("invalid-size", `${id}: memory ${record.memoryBytes} is not a whole number of MiB`);
    }
    if (l.gpus.some((g) => g.pciBusId === "")) {
      throw new RuntimeRefused("gpu-without-bus-id", `${id}: a GPU has no PCI bus id in the inventory`);
    }
    if (l.restoreFrom) {
      if (!this.#o.snapshots) {
        throw new RuntimeRefused("snapshot-unsupported", `${id}: this host restores no snapshots`);
      }
      await Deno.mkdir(`${this.#dir}/instances`, { recursive: true, mode: 0o700 });
      const meta = await unpackSnapshot({
        archive: this.#o.snapshots.path(l.restoreFrom.sha256),
        instanceDir: this.instanceDir(id),
        src: l.restoreFrom,
        vcpus: record.vcpus,
        memoryMiB: record.memoryBytes / MiB,
        cpuModel: this.#o.cpuModel ?? (() => Promise.resolve("")),
      });
      _check(
        await this.#o.host.define({
          id,
          allocationId: record.allocationId,
          vcpus: record.vcpus,
          memoryMiB: record.memoryBytes / MiB,
          image: null,
          nics: l.nics,
          gpus: l.gpus,
          placement: l.placement,
          seed: meta.seed,
          restoredFrom: l.restoreFrom.sha256,
          volumes: _numbered(record.volumes),
        }),
        id,
      );
      this.#o.log?.info({ instance: id, snapshot: l.restoreFrom.sha256 }, "libvirt-kvm: defined from a snapshot");
      return;
    }
    if (!l.image) throw new RuntimeRefused("invalid-spec", `${id}: no image to boot from`);
    let base: string;
    try {
      base = await this.images.ensure(l.image.url, l.image.sha256, l.image.format);
    } catch (e) {
      if (e instanceof ImageFetchRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    const dir = this.instanceDir(id);
    await Deno.mkdir(`${this.#dir}/instances`, { recursive: true, mode: 0o700 });
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const disk = `${dir}/disk.qcow2`;
    const ob = overlayBase(l.image.format);
    const baseSize = ob ? await baseVirtualSize(base, ob) : 0;
    if (!(await _exists(disk))) {
      const size = Math.max(l.diskBytes, baseSize);
      if (size <= 0) throw new RuntimeRefused("invalid-size", `${id}: an iso install needs a disk size`);
      await createOverlay(`${disk}.tmp`, ob ? { path: base, format: ob } : null, size);
      await Deno.rename(`${disk}.tmp`, disk);
    } else if (l.diskBytes > 0) {
      const d = (await this.#o.host.list()).find((x) => x.name === id);
      await this.#grow(id, disk, l.diskBytes, { sha256: l.image.sha256, format: l.image.format }, d?.state);
    }
    // Every instance gets its seed ISO: the user data (empty without any) and the channel key of its guest channels.
    const key = await ensureChannelKey(dir);
    await buildSeedIso(`${dir}/seed.iso`, id, l.hostname, l.userData ?? new Uint8Array(0), key);
    const plan: DomainPlan = {
      id,
      allocationId: record.allocationId,
      vcpus: record.vcpus,
      memoryMiB: record.memoryBytes / MiB,
      image: { sha256: l.image.sha256, format: l.image.format },
      nics: l.nics,
      gpus: l.gpus,
      placement: l.placement,
      seed: true,
      restoredFrom: null,
      volumes: _numbered(record.volumes),
    };
    _check(await this.#o.host.define(plan), id);
    this.#o.log?.info({ instance: id }, "libvirt-kvm: defined");
  }

  /**
   * Grows the root disk to `bytes`: `qemu-img resize` of the overlay when the domain is stopped (after
   * `checkOverlay` of it against its recorded base), `virsh blockresize` through the host when it runs (the host
   * checks the files as root first). The same size does nothing; a smaller one is refused `disk-shrink`.
   */
  async grow(id: string, bytes: number): Promise<void> {
    if (!INSTANCE_ID.test(id)) {
      throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    }
    if (!Number.isSafeInteger(bytes) || bytes < 1) {
      throw new RuntimeRefused("invalid-size", `${id}: disk size ${bytes} is not a positive byte count`);
    }
    const d = (await this.#o.host.list()).find((x) => x.name === id);
    if (!d) throw new RuntimeRefused("no-domain", `${id}: no domain to grow`);
    if (!d.plan) throw new RuntimeRefused("unmanaged-domain", `domain ${id} is not this node's; never grown`);
    await this.#grow(id, `${this.instanceDir(id)}/disk.qcow2`, bytes, d.plan.image, d.state);
  }

  /** Grows the disk to `bytes` (`qemu-img resize` stopped, `blockresize` running); a smaller size is refused. */
  async #grow(
    id: string,
    disk: string,
    bytes: number,
    img: DomainPlan["image"],
    state: DomainState | undefined,
  ): Promise<void> {
    const have = Number(parseQcow2Header(await readQcow2Prefix(disk)).virtualSize);
    if (bytes === have) return;
    if (bytes < have) {
      throw new RuntimeRefused("disk-shrink", `${id}: the disk is ${have} bytes; ${bytes} would shrink it`);
    }
    if (state === "running" || state === "paused") {
      _check(await this.#o.host.blockresize(id, bytes), id);
      return;
    }
    const ob = img ? overlayBase(img.format) : null;
    try {
      await checkOverlay(disk, img && ob ? { path: this.images.path(img.sha256, img.format), format: ob } : null);
    } catch (e) {
      if (e instanceof ImageRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    await resizeDisk(disk, bytes);
    this.#o.log?.info({ instance: id, bytes }, "libvirt-kvm: disk grown (stopped)");
  }

  /**
   * Brings the domain's volumes to `volumes`: a stopped domain is redefined with them (`vdb` onward in their order);
   * a running or paused one has the volumes it should no longer have (or has otherwise) detached, then the new ones
   * attached live.
   */
  async setVolumes(id: string, volumes: readonly VolumeAttachment[]): Promise<void> {
    await this.#holds.free(id);
    const d = (await this.#o.host.list()).find((x) => x.name === id);
    if (!d) throw new RuntimeRefused("no-domain", `${id}: no domain to attach volumes to`);
    if (!d.plan) throw new RuntimeRefused("unmanaged-domain", `domain ${id} is not this node's; never touched`);
    const have = d.plan.volumes ?? [];
    if (d.state === "stopped") {
      _check(await this.#o.host.define({ ...d.plan, volumes: _numbered(volumes) }), id);
      this.#o.log?.info({ instance: id, volumes: volumes.map((v) => v.volumeId) }, "libvirt-kvm: volumes redefined");
      return;
    }
    for (const p of have) {
      if (!volumes.some((a) => _same(p, a))) _checkDetach(await this.#o.host.detachDisk(id, { volume: p.id }), id);
    }
    for (const a of volumes) {
      if (have.some((p) => _same(p, a))) continue;
      const disk = { volume: { id: a.volumeId, serial: a.serial, readOnly: a.readOnly } };
      _check(await this.#o.host.attachDisk(id, disk), id);
    }
  }

  /** Tells a running or paused domain that volume `volumeId` grew to `bytes` (`blockresize` of its device). */
  async growVolume(id: string, volumeId: string, bytes: number): Promise<void> {
    await this.#holds.free(id);
    _check(await this.#o.host.blockresize(id, bytes, volumeId), id);
  }

  /** Starts the domain; a domain restored from a memory snapshot starts from its state (`libvirt.restore`) once. */
  async start(id: string, paused: boolean): Promise<void> {
    await this.#holds.free(id);
    const state = `${this.instanceDir(id)}/${MEMORY_STATE_FILE}`;
    if (INSTANCE_ID.test(id) && await _exists(state)) {
      _check(await this.#o.host.restore(id, paused), id);
      await Deno.remove(state);
      this.#o.log?.info({ instance: id }, "libvirt-kvm: resumed from the snapshot's memory state");
      return;
    }
    _check(await this.#o.host.start(id, paused), id);
  }
  async pause(id: string): Promise<void> {
    await this.#holds.free(id);
    _check(await this.#o.host.suspend(id), id);
  }
  async resume(id: string): Promise<void> {
    await this.#holds.free(id);
    _check(await this.#o.host.resume(id), id);
  }

  async #state(id: string) {
    return (await this.#o.host.list()).find((d) => d.name === id)?.state;
  }

  async stop(id: string): Promise<void> {
    await this.#holds.free(id);
    const state = await this.#state(id);
    if (state === undefined || state === "stopped") return;
    if (state === "running") {
      _check(await this.#o.host.shutdown(id), id);
      const clock = this.#o.clock ?? realClock;
      const until = clock.monotonic() + (this.#o.shutdownGraceMs ?? 60_000);
      while (clock.monotonic() < until) {
        if ((await this.#state(id)) !== "running") break;
        await clock.sleep(1000);
      }
    }
    const left = await this.#state(id);
    if (left === "running" || left === "paused") {
      _check(await this.#o.host.destroy(id), id);
      this.#o.log?.info({ instance: id }, "libvirt-kvm: destroyed after the shutdown grace");
    }
  }

  /** The balloon through `domstats --balloon`; a domain defined without one is {@link NoBalloon}. */
  async readBalloon(id: string): Promise<BalloonReading> {
    await this.#holds.free(id);
    const o = await this.#o.host.domstats(id);
    if (o.refused?.reason === "no-balloon") throw new NoBalloon(`${id}: ${o.refused.message}`);
    _check(o, id);
    const b = o.balloon;
    if (!b || b.currentKiB === null) throw new Error(`${id}: libvirt reports no balloon size`);
    return { currentBytes: b.currentKiB * 1024, usedBytes: b.usedKiB === null ? null : b.usedKiB * 1024 };
  }

  /** Sets the balloon with `virsh setmem --live` (whole KiB); a domain defined without one is {@link NoBalloon}. */
  async setBalloon(id: string, bytes: number): Promise<void> {
    await this.#holds.free(id);
    if (!Number.isSafeInteger(bytes) || bytes < 1024 || bytes % 1024 !== 0) {
      throw new RangeError(`${id}: balloon size ${bytes} is not a whole number of KiB`);
    }
    const o = await this.#o.host.setmem(id, bytes / 1024);
    if (o.refused?.reason === "no-balloon") throw new NoBalloon(`${id}: ${o.refused.message}`);
    _check(o, id);
  }

  /**
   * One identity rebind try (`core/rebind`): the image written to `instances/<id>/rebind.raw` (0660, the node's), hot-added (`libvirt.attach_disk` `{rebind: true}`)
   * through the host, the answer read from its last 4 KiB, then hot-removed, zeroed and deleted either way.
   */
  async rebind(id: string, image: Uint8Array, nonce: string): Promise<boolean> {
    if (!INSTANCE_ID.test(id)) {
      throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    }
    await this.#holds.free(id);
    const disk = rebindFileDisk(`${this.instanceDir(id)}/${REBIND_DISK.file}`, 0o660, {
      attach: async () => _check(await this.#o.host.attachDisk(id, { rebind: true }), id),
      detach: async () => _check(await this.#o.host.detachDisk(id, { rebind: true }), id),
    });
    return await runRebind(disk, image, nonce, { clock: this.#o.clock ?? realClock, log: this.#o.log, instance: id });
  }

  async delete(id: string): Promise<void> {
    await this.#holds.free(id);
    const d = (await this.#o.host.list()).find((x) => x.name === id);
    if (d && !d.plan) throw new RuntimeRefused("unmanaged-domain", `domain ${id} is not this node's; never removed`);
    if (d) {
      if (d.state !== "stopped") _check(await this.#o.host.destroy(id), id);
      _check(await this.#o.host.undefine(id), id);
    }
    if (INSTANCE_ID.test(id)) {
      await Deno.remove(this.instanceDir(id), { recursive: true }).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
  }
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
