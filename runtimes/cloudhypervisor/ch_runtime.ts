/**
 * The `cloud-hypervisor` instance runtime, the node's half (seed 000 §The runtimes, the `cloud-hypervisor` column).
 * Files live under `<data dir>/cloud-hypervisor`: base images through the same {@link ImageStore} and disk tools as
 * `libvirt-kvm` (shared code, its own directory), the `qemu-img create -u` overlay, the NoCloud seed ISO (attached as
 * a read-only `Raw` disk) and `vm.json`, bcd's record (`vm_record.ts`). Everything root does — taps, the VMM's unit,
 * handing tap fds to the VMM, stopping the unit — goes through a {@link ChHostPort}; the node itself drives each VMM
 * over its API socket ({@link ChApiClient}).
 *
 * - `list`: only directories with a `vm.json` (a directory without one is not bcd's and is never listed); the state
 *   from the unit and `vm.info` (no running unit → stopped; `Paused` → paused; any other live VMM → running, so a
 *   VMM that survived a stop is stopped again, never forgotten). A `vm.json` that fails the strict read is listed
 *   without a record: unmanaged, never touched.
 * - `define`: an `iso` is refused ("cloud-hypervisor boots disk images, not an iso"); the uid is the lowest of
 *   `0x7FFD0000` up that no other record holds, and kept across redefines; the configuration has no NICs.
 * - `start`: the overlay checked (`checkOverlay`), the taps made, the unit launched, the API awaited, `vm.create`,
 *   each NIC through `addNet` (its tap's fd), `vm.boot`, then `vm.pause` for a paused start. A failure after the
 *   launch stops the unit again (a failed attach means no VM); a boot that fails for lack of memory is `capacity`.
 * - `stop`: the ladder — the ACPI power button and up to 60 s (the injected clock) for the unit to end, then
 *   `vm.shutdown`, `vmm.shutdown` and `systemctl stop`; it fails ({@link VmmSurvived}) unless `systemctl show` then
 *   reports `inactive` or `failed`, so a VMM that survived is never forgotten. The taps are deleted after.
 * - `delete`: stops, deletes the taps and removes the directory (never one whose VMM still runs).
 * - `grow`: `qemu-img resize` of the checked overlay while stopped, `vm.resize-disk` while running; never smaller.
 *
 * - restores (`restore_from`): the downloaded archive is unpacked and checked as `libvirt-kvm`'s is (the same code:
 *   another runtime's or CPU model's refused, a flat disk, the seed raw) with cloud-hypervisor's own state under
 *   `ch/`; the record has no base image and the overlay no backing file. A memory snapshot's first start rebuilds
 *   `ch/config.json` (`restore_config.ts`), then `vm.restore` with the taps' fds and `vm.resume`; `ch/` goes after.
 *   The volumes are the current spec's, their ACL entries granted before the VMM runs: those whose serial the
 *   snapshot had come back in the restore's configuration under that disk's id, the others are hot-added after the
 *   restore; the snapshot's own disk paths are never used.
 *
 * - GPUs: VFIO passthrough of `/sys/bus/pci/devices/<address>/` (a GPU without a bus id fails the instance); root
 *   binds their whole IOMMU groups before each start (`vfio`) and gives them back at the delete (`unvfio`).
 *
 * Snapshots are taken by `ch_snapshots.ts` (holding the instance with {@link ChRuntime.exclusive}).
 *
 * - files: the node keeps owning them and grants the VMM's uid ACL entries on the instance directory for the run
 *   (`vmm_access.ts`), removed at the stop.
 *
 * - volumes (000 §Persistent volumes): the record's volumes are `Raw` disks with their serials after the root disk and
 *   the seed in `vm.create`'s configuration, read-only when attached so; their paths are `<data dir>/volumes/<id>.raw`,
 *   built from the volume id here and by root (`ch_host.ts` binds each into the unit, and the store's directory for
 *   hot-plug). For the run the VMM's user gets an ACL entry on each (`r` or `rw`) and search (`x`) on the store's
 *   directory, removed at the stop. `setVolumes` rewrites a stopped instance's record; on a running or paused VM it
 *   unplugs (`vm.remove-device`, its entry revoked) what it should no longer have, then hot-plugs (`vm.add-disk`) the
 *   new ones, writing the record after each step. A removal the VMM accepted but the guest has not ejected yet (still
 *   in `vm.info`'s `device_tree`, `ch_unplug.ts`) is {@link DetachPending}: the record keeps the volume (so does the
 *   one-writer hold) and its entry stays, and the next pass asks again. `growVolume` is `vm.resize-disk` of the
 *   volume's disk.
 *
 * - identity rebind (`rebind`, `ch_rebind.ts`): the 1 MiB disk hot-added as `vdz` with serial `bc-rebind`.
 *
 * - balloon (000 §Memory ballooning, `ch_balloon.ts`): `readBalloon`/`setBalloon` over `vm.info` and `vm.resize`'s
 *   `desired_balloon`, in what the balloon leaves the guest as on `libvirt-kvm`; the guest's use is the VMM's
 *   anonymous memory, which root reads (`ChHostPort.memory`, `vmm_memory.ts`). A memory restore sets the balloon's target back to bcd's.
 *
 * @module
 */
import { InstanceHolds } from "../instance_holds.ts";
import { INSTANCE_ID } from "../../core/converge/instances/domain_plan.ts";
import {
  DetachPending,
  type Domain,
  type DomainRecord,
  type DomainState,
  type InstanceRuntime,
  type LaunchSpec,
  RuntimeRefused,
} from "../../core/converge/instances/runtime.ts";
import { checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import { parseQcow2Header, readQcow2Prefix } from "../../core/images/qcow2_header.ts";
import { type Clock, realClock } from "../../core/clock.ts";
import type { Logger } from "../../core/log/mod.ts";
import { baseVirtualSize, buildSeedIso, createOverlay, overlayBase, resizeDisk } from "../libvirt/disk_tools.ts";
import { ensureChannelKey } from "../libvirt/channel_key.ts";
import { ImageFetchRefused, ImageStore } from "../libvirt/image_store.ts";
import { unpackSnapshot } from "../libvirt/snapshot_restore.ts";
import { SNAPSHOT_META_FILE } from "../libvirt/snapshot_meta.ts";
import type { SnapshotStore } from "../libvirt/snapshot_store.ts";
import { SetfaclAccess, type VmmFileAccess } from "./vmm_access.ts";
import { MAX_SAVED_CONFIG_BYTES, rebuildRestoreConfig, RestoreConfigRefused, restoredDisks } from "./restore_config.ts";
import { ChApiClient, ChApiError, ChTransportError } from "./api_client.ts";
import type { DiskConfig, VmConfig, VmState } from "./api_types.ts";
import type { ChHostPort, HostOutcome } from "../../core/converge/instances/ch_port.ts";
import { CH_FIRMWARE, VMM_UID_BASE, VMM_UID_COUNT } from "./unit.ts";
import {
  type ChRecord,
  ChRecordRefused,
  type ChVolume,
  readRecord,
  RECORD_FILE,
  sysfsDevice,
  volumePath,
  writeRecord,
} from "./vm_record.ts";
import type { VolumeAttachment } from "../../core/volumes/grammar.ts";
import type { BalloonReading } from "../../core/balloon/port.ts";
import { ownBalloon, readChBalloon, setChBalloon } from "./ch_balloon.ts";
import { chRebind } from "./ch_rebind.ts";
import { unplugDevice } from "./ch_unplug.ts";
import { CH_RUNTIME } from "../runtime_names.ts";

/** The runtime's name in `InstanceSpec.runtime`. */
export { CH_RUNTIME };

/** A stop that left the VMM's unit running. */
export class VmmSurvived extends Error {
  override name = "VmmSurvived";
}

/** Options of {@link ChRuntime}. */
export interface ChRuntimeOptions {
  readonly host: ChHostPort;
  readonly dataDir: string;
  readonly fetch?: typeof fetch;
  /** The stop ladder's and the API wait's clock (default the real one). */
  readonly clock?: Pick<Clock, "monotonic" | "sleep">;
  /** How long the power button is given (default 60 s). */
  readonly powerButtonGraceMs?: number;
  /** How long a launched VMM may take to answer on its socket (default 10 s). */
  readonly apiWaitMs?: number;
  /** The VMM user's access to the instance's files (default `setfacl`'s ACL entries, as under `bcd helper`). */
  readonly access?: VmmFileAccess;
  /** The downloaded snapshots `restore_from` boots from; without it such an instance is refused. */
  readonly snapshots?: SnapshotStore;
  /** The host CPU model (the inventory's): a memory snapshot restores only on the model it was taken on. */
  readonly cpuModel?: () => Promise<string>;
  readonly log?: Logger;
}

const MiB = 1024 * 1024;

function _check(o: HostOutcome, id: string): void {
  if (o.refused) throw new RuntimeRefused(o.refused.reason, `${id}: ${o.refused.message}`);
}

function _stateOf(s: VmState): DomainState {
  return s === "Running" ? "running" : s === "Paused" ? "paused" : "stopped";
}

/** The runtime. */
export class ChRuntime implements InstanceRuntime {
  readonly name = CH_RUNTIME;
  readonly images: ImageStore;
  readonly dir: string;
  readonly #o: ChRuntimeOptions;
  readonly #clock: Pick<Clock, "monotonic" | "sleep">;
  readonly #access: VmmFileAccess;
  /** Instances a snapshot holds: the state they had when it began, and when it ends. */
  readonly #holds = new InstanceHolds();

  constructor(opts: ChRuntimeOptions) {
    this.#o = opts;
    this.dir = `${opts.dataDir}/cloud-hypervisor`;
    this.images = new ImageStore({ dir: `${this.dir}/images`, fetch: opts.fetch });
    this.#clock = opts.clock ?? realClock;
    this.#access = opts.access ?? new SetfaclAccess();
  }

  /**
   * Runs `f` while nothing else acts on instance `id`: the converger's verbs on it wait until `f` ends, and the listing
   * shows `state`, the state it had when `f` began (a snapshot pauses the VM for a moment; no pass may resume it then).
   */
  exclusive<T>(id: string, state: DomainState, f: () => Promise<T>): Promise<T> {
    return this.#holds.exclusive(id, state, f);
  }

  /** The record of a managed instance (the snapshot taker's view), refused like every verb. */
  recordOf(id: string): Promise<ChRecord> {
    return this.#managed(id);
  }

  /** The instance's state as listed. */
  async stateOf(id: string): Promise<DomainState> {
    return this.#holds.stateOf(id) ?? await this.#state(id);
  }

  instanceDir(id: string): string {
    return `${this.dir}/instances/${id}`;
  }

  #paths(id: string) {
    return { instanceDir: this.instanceDir(id), volumesDir: this.#volumesDir };
  }

  get #volumesDir(): string {
    return `${this.#o.dataDir}/volumes`;
  }

  /** The instance's API client (for the volume, balloon and rebind code: `vm.add-disk`, `vm.resize`, ...). */
  api(id: string): ChApiClient {
    if (!INSTANCE_ID.test(id)) throw new TypeError(`instance id ${JSON.stringify(id)} is not valid`);
    return new ChApiClient({ socket: `${this.instanceDir(id)}/api.sock` });
  }

  async #ids(): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const e of Deno.readDir(`${this.dir}/instances`)) {
        if (e.isDirectory && INSTANCE_ID.test(e.name)) out.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out.sort();
  }

  /** The record; `null` for a directory that is not bcd's (no `vm.json`, or one that fails the strict read). */
  async #record(id: string): Promise<ChRecord | null | undefined> {
    try {
      return (await readRecord(id, this.#paths(id))) ?? null;
    } catch (e) {
      if (e instanceof ChRecordRefused) {
        this.#o.log?.warn({ instance: id, err: e.message }, "cloud-hypervisor: vm.json refused; left alone");
        return null;
      }
      throw e;
    }
  }

  /** The record of a managed instance, or the refusal: none (`no-domain`) or not bcd's (`unmanaged-domain`). */
  async #managed(id: string): Promise<ChRecord> {
    if (!INSTANCE_ID.test(id)) {
      throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    }
    const r = await this.#record(id);
    if (r) return r;
    const there = await Deno.lstat(this.instanceDir(id)).then(() => true, (e) => {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    });
    if (there) {
      throw new RuntimeRefused("unmanaged-domain", `instance directory ${id} has no valid ${RECORD_FILE}; not bcd's`);
    }
    throw new RuntimeRefused("no-domain", `${id}: no such instance`);
  }

  /**
   * The instance's state: `stopped` when its unit is not running; else the VM's (`Running`, `Paused`). A unit that
   * runs with no booted VM in it (a VMM a failed stop or start left behind), or whose API does not answer, is
   * `running`: a live VMM is never reported stopped, so the converger stops it again instead of forgetting it.
   */
  async #state(id: string): Promise<DomainState> {
    const unit = await this.#o.host.state(id);
    if (unit !== "active" && unit !== "activating" && unit !== "reloading") return "stopped";
    return (await this.#vmState(id)) === "paused" ? "paused" : "running";
  }

  /** What `vm.info` says (`stopped` for a VM not created or not booted, `unreachable` for no answer). */
  async #vmState(id: string): Promise<DomainState | "unreachable"> {
    try {
      return _stateOf((await this.api(id).info()).state);
    } catch (e) {
      if (e instanceof ChApiError && e.notCreated) return "stopped";
      if (e instanceof ChTransportError) return "unreachable";
      throw e;
    }
  }

  async list(): Promise<Domain[]> {
    const out: Domain[] = [];
    for (const id of await this.#ids()) {
      const r = await this.#record(id);
      if (r === undefined) continue;
      if (r === null) {
        const has = await Deno.lstat(`${this.instanceDir(id)}/${RECORD_FILE}`).then(() => true, () => false);
        if (has) out.push({ id, state: await this.#state(id), record: undefined });
        continue;
      }
      out.push({
        id,
        state: this.#holds.stateOf(id) ?? await this.#state(id),
        record: {
          id,
          allocationId: r.allocationId,
          vcpus: r.vcpus,
          memoryBytes: r.memoryBytes,
          imageSha256: r.image?.sha256 ?? "",
          gpus: r.gpus.map((g) => g.uuid),
          ...(r.placement && r.placement.hugepages !== "none" ? { hugepages: r.placement.hugepages } : {}),
          ...(r.volumes.length > 0
            ? { volumes: r.volumes.map((v) => ({ volumeId: v.id, serial: v.serial, readOnly: v.readonly })) }
            : {}),
        },
      });
    }
    return out;
  }

  async define(record: DomainRecord): Promise<void> {
    const id = record.id;
    if (!INSTANCE_ID.test(id)) {
      throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    }
    const l = record.launch;
    if (!l) {
      throw new RuntimeRefused(
        "invalid-spec",
        `${id}: the cloud-hypervisor runtime needs the instance's image and disks`,
      );
    }
    if (record.memoryBytes % MiB !== 0 || record.memoryBytes < MiB) {
      throw new RuntimeRefused("invalid-size", `${id}: memory ${record.memoryBytes} is not a whole number of MiB`);
    }
    if (l.gpus.some((g) => g.pciBusId === "")) {
      throw new RuntimeRefused("gpu-without-bus-id", `${id}: a GPU has no PCI bus id in the inventory`);
    }
    if (!l.restoreFrom && l.image?.format === "iso") {
      throw new RuntimeRefused("iso-unsupported", `${id}: cloud-hypervisor boots disk images, not an iso`);
    }
    const dir = this.instanceDir(id);
    const prior = await this.#record(id);
    const restoring = l.restoreFrom !== undefined && await _exists(`${dir}/${SNAPSHOT_META_FILE}`);
    if (prior === null && !restoring && await _exists(dir)) {
      throw new RuntimeRefused("unmanaged-domain", `instance directory ${id} is not bcd's; never defined over`);
    }
    await Deno.mkdir(`${this.dir}/instances`, { recursive: true, mode: 0o700 });
    let image: ChRecord["image"] = null;
    let seed = true;
    if (l.restoreFrom) {
      if (!this.#o.snapshots) {
        throw new RuntimeRefused("snapshot-unsupported", `${id}: this host restores no snapshots`);
      }
      const meta = await unpackSnapshot({
        archive: this.#o.snapshots.path(l.restoreFrom.sha256),
        instanceDir: dir,
        src: l.restoreFrom,
        vcpus: record.vcpus,
        memoryMiB: record.memoryBytes / MiB,
        cpuModel: this.#o.cpuModel ?? (() => Promise.resolve("")),
        runtime: CH_RUNTIME,
        memoryFiles: chMemoryFiles(record.memoryBytes),
      });
      seed = meta.seed;
    } else {
      if (!l.image) throw new RuntimeRefused("invalid-spec", `${id}: no image to boot from`);
      const fmt = overlayBase(l.image.format)!;
      image = { sha256: l.image.sha256, format: fmt };
      await this.#overlay(id, l.image.url, image, l.diskBytes);
      const key = await ensureChannelKey(dir);
      await buildSeedIso(`${dir}/seed.iso`, id, l.hostname, l.userData ?? new Uint8Array(0), key);
    }
    const uid = prior?.uid ?? await this.#freeUid();
    const volumes = (record.volumes ?? []).map(_chVolume);
    try {
      await writeRecord({
        v: 1,
        id,
        allocationId: record.allocationId,
        uid,
        vcpus: record.vcpus,
        memoryBytes: record.memoryBytes,
        image,
        restoredFrom: l.restoreFrom?.sha256 ?? null,
        nics: l.nics,
        gpus: l.gpus,
        placement: l.placement,
        volumes,
        config: _withVolumes(_config(dir, record, l, image !== null, seed), this.#volumesDir, [], volumes),
      }, this.#paths(id));
    } catch (e) {
      if (e instanceof ChRecordRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    this.#o.log?.info({ instance: id, uid }, "cloud-hypervisor: defined");
  }

  /** The verified base image and the instance's overlay on it (grown to `diskBytes` when it is there already). */
  async #overlay(
    id: string,
    url: string,
    image: { sha256: string; format: "qcow2" | "raw" },
    diskBytes: number,
  ): Promise<void> {
    const dir = this.instanceDir(id);
    let base: string;
    try {
      base = await this.images.ensure(url, image.sha256, image.format);
    } catch (e) {
      if (e instanceof ImageFetchRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const disk = `${dir}/disk.qcow2`;
    if (!(await Deno.lstat(disk).then(() => true, () => false))) {
      const size = Math.max(diskBytes, await baseVirtualSize(base, image.format));
      await createOverlay(`${disk}.tmp`, { path: base, format: image.format }, size);
      await Deno.rename(`${disk}.tmp`, disk);
    } else if (diskBytes > 0) {
      await this.grow(id, diskBytes);
    }
  }

  /** The lowest VMM uid no record holds. */
  async #freeUid(): Promise<number> {
    const used = new Set<number>();
    for (const id of await this.#ids()) {
      const r = await this.#record(id);
      if (r) used.add(r.uid);
    }
    for (let u = VMM_UID_BASE; u < VMM_UID_BASE + VMM_UID_COUNT; u++) if (!used.has(u)) return u;
    throw new RuntimeRefused("capacity", `every VMM uid from 0x7FFD0000 up is taken`);
  }

  async #checkDisk(id: string, r: ChRecord): Promise<void> {
    const img = r.image;
    try {
      await checkOverlay(
        `${this.instanceDir(id)}/disk.qcow2`,
        img ? { path: this.images.path(img.sha256, img.format), format: img.format } : null,
      );
    } catch (e) {
      if (e instanceof ImageRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
  }

  async start(id: string, paused: boolean): Promise<void> {
    await this.#holds.free(id);
    const r = await this.#managed(id);
    if ((await this.#state(id)) !== "stopped") {
      const vm = await this.#vmState(id);
      if (vm === "running" || vm === "paused") return;
      // A VMM left without a booted VM: its unit goes first, so the VM is built from scratch.
      const out = await this.#o.host.stop(id);
      _check(out, id);
      if (!out.state || !this.#ended(out.state)) {
        throw new VmmSurvived(`${id}: a VMM left behind is ${out.state} after its stop; no second one is started`);
      }
    }
    await this.#checkDisk(id, r);
    const restore = await this.#rebuildSaved(id, r);
    _check(await this.#o.host.taps(id), id);
    _check(await this.#o.host.vfio(id), id);
    await this.#access.grant(this.instanceDir(id), r.uid);
    for (const v of r.volumes) await this.#grantVolume(v, r.uid);
    const launched = await this.#o.host.launch(id);
    // A refused launch runs no VMM: the entries it was given go again.
    if (launched.refused) await this.#revokeAll(id, r);
    _check(launched, id);
    try {
      const api = this.api(id);
      await this.#waitApi(api, id);
      if (restore) {
        // A memory snapshot's first start: vm.restore (root hands the taps' fds as net_fds), then vm.resume.
        _check(await this.#o.host.restore(id, false), id);
        // The spec's volumes the snapshot did not have: hot-added (their entries were granted above), so the guest
        // is told of them; those it had came back by serial in the restore's configuration (`restore_config.ts`).
        for (const d of restore.hotplug) await api.addDisk(d);
        await ownBalloon(id, r, api);
        if (!paused) await api.resume();
        await Deno.remove(`${this.instanceDir(id)}/${CH_STATE_DIR}`, { recursive: true });
        this.#o.log?.info({ instance: id, paused }, "cloud-hypervisor: resumed from the snapshot's memory state");
        return;
      }
      await api.create(r.config);
      for (let i = 0; i < r.nics.length; i++) _check(await this.#o.host.addNet(id, i), id);
      try {
        await api.boot();
      } catch (e) {
        if (e instanceof ChApiError && e.messages.some((m) => /Cannot allocate memory|out of memory/i.test(m))) {
          throw new RuntimeRefused("capacity", `${id}: ${e.message}`, { cause: e });
        }
        throw e;
      }
      if (paused) await api.pause();
    } catch (e) {
      // No half-built VM stays behind: the unit goes, and the next pass starts over.
      await this.#o.host.stop(id);
      if (e instanceof ChApiError) throw new RuntimeRefused("vmm-refused", `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    this.#o.log?.info({ instance: id, paused }, "cloud-hypervisor: started");
  }

  /**
   * Before a memory snapshot's first start: its `ch/config.json` (bounded) rebuilt around bcd's configuration
   * (`restore_config.ts`) and written back, with the volumes to hot-add after the restore; `false` when there is none
   * (a plain start).
   */
  async #rebuildSaved(id: string, r: ChRecord): Promise<false | { hotplug: DiskConfig[] }> {
    const file = `${this.instanceDir(id)}/${CH_STATE_DIR}/config.json`;
    let st: Deno.FileInfo;
    try {
      st = await Deno.lstat(file);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
    const bad = (m: string) => new RuntimeRefused("bad-snapshot", `${id}: the snapshot's config.json ${m}`);
    if (!st.isFile) throw bad("is not a regular file");
    if (st.size > MAX_SAVED_CONFIG_BYTES) throw bad(`is more than ${MAX_SAVED_CONFIG_BYTES} bytes`);
    let saved: unknown;
    try {
      saved = JSON.parse(await Deno.readTextFile(file));
    } catch (e) {
      if (e instanceof SyntaxError) throw bad("is not JSON");
      throw e;
    }
    try {
      const rebuilt = rebuildRestoreConfig(saved, r.config, r.nics);
      await Deno.writeTextFile(`${file}.tmp`, JSON.stringify(rebuilt), { mode: 0o600 });
      await Deno.rename(`${file}.tmp`, file);
      return { hotplug: restoredDisks(saved, r.config.disks ?? [], r.nics.length).hotplug };
    } catch (e) {
      if (e instanceof RestoreConfigRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
  }

  async #waitApi(api: ChApiClient, id: string): Promise<void> {
    const until = this.#clock.monotonic() + (this.#o.apiWaitMs ?? 10_000);
    for (;;) {
      try {
        await api.ping();
        return;
      } catch (e) {
        if (!(e instanceof ChTransportError && e.reason === "vmm-unreachable")) throw e;
        if (this.#clock.monotonic() >= until) {
          throw new ChTransportError("vmm-unreachable", `${id}: the VMM did not open its API socket in time`, {
            cause: e,
          });
        }
        await this.#clock.sleep(100);
      }
    }
  }

  async pause(id: string): Promise<void> {
    await this.#holds.free(id);
    await this.#managed(id);
    await this.#apiCall(id, (a) => a.pause());
  }

  async resume(id: string): Promise<void> {
    await this.#holds.free(id);
    await this.#managed(id);
    await this.#apiCall(id, (a) => a.resume());
  }

  async #apiCall(id: string, f: (a: ChApiClient) => Promise<void>): Promise<void> {
    try {
      await f(this.api(id));
    } catch (e) {
      if (e instanceof ChApiError) throw new RuntimeRefused("vmm-refused", `${id}: ${e.message}`, { cause: e });
      throw e;
    }
  }

  #ended = (s: string) => s === "inactive" || s === "failed";

  /** The stop ladder (see the module doc). */
  async stop(id: string): Promise<void> {
    await this.#holds.free(id);
    const r = await this.#managed(id);
    if (this.#ended(await this.#o.host.state(id))) {
      await this.#revokeAll(id, r);
      _check(await this.#o.host.untaps(id), id);
      return;
    }
    const api = this.api(id);
    if ((await this.#vmState(id)) === "running" && await _tolerate(api.powerButton())) {
      const until = this.#clock.monotonic() + (this.#o.powerButtonGraceMs ?? 60_000);
      while (this.#clock.monotonic() < until && !this.#ended(await this.#o.host.state(id))) {
        await this.#clock.sleep(1000);
      }
    }
    if (!this.#ended(await this.#o.host.state(id))) {
      await _tolerate(api.shutdown());
      await _tolerate(api.vmmShutdown());
      this.#o.log?.info({ instance: id }, "cloud-hypervisor: the power button did not stop the VM; shut down");
    }
    const out = await this.#o.host.stop(id);
    _check(out, id);
    if (!out.state || !this.#ended(out.state)) {
      throw new VmmSurvived(`${id}: the VMM's unit is ${out.state} after its stop; it is not forgotten`);
    }
    await this.#revokeAll(id, r);
    _check(await this.#o.host.untaps(id), id);
  }

  /** The VMM user's entries on the instance directory, the record's volumes and the store's directory, removed. */
  async #revokeAll(id: string, r: ChRecord): Promise<void> {
    await this.#access.revoke(this.instanceDir(id), r.uid);
    for (const v of r.volumes) await this.#access.revokeFile(volumePath(this.#volumesDir, v.id), r.uid);
    if (r.volumes.length > 0) await this.#access.revokeFile(this.#volumesDir, r.uid);
  }

  /** The VMM user's entry on volume `v` (`r` or `rw`), and search on the store's directory. */
  async #grantVolume(v: ChVolume, uid: number): Promise<void> {
    await this.#access.grantFile(this.#volumesDir, uid, "x");
    await this.#access.grantFile(volumePath(this.#volumesDir, v.id), uid, v.readonly ? "r" : "rw");
  }

  /** Writes the record with `volumes` (and its configuration's volume disks to match). */
  async #writeVolumes(id: string, r: ChRecord, volumes: readonly ChVolume[]): Promise<ChRecord> {
    const next: ChRecord = {
      ...r,
      volumes,
      config: _withVolumes(r.config, this.#volumesDir, r.volumes, volumes),
    };
    try {
      await writeRecord(next, this.#paths(id));
    } catch (e) {
      if (e instanceof ChRecordRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    return next;
  }

  /**
   * Brings the instance's volumes to `volumes`: a stopped instance's record is rewritten (they are in the next
   * `vm.create`); a running or paused VM has what it should no longer have (or has otherwise) unplugged with
   * `vm.remove-device`, then the new ones hot-plugged with `vm.add-disk` (`Raw`, their serial, read-only when asked),
   * the record written after each, so a failure half-way leaves it saying what the VM has.
   */
  async setVolumes(id: string, volumes: readonly VolumeAttachment[]): Promise<void> {
    await this.#holds.free(id);
    let r = await this.#managed(id);
    const want = volumes.map(_chVolume);
    if ((await this.#state(id)) === "stopped") {
      await this.#writeVolumes(id, r, want);
      this.#o.log?.info({ instance: id, volumes: want.map((v) => v.id) }, "cloud-hypervisor: volumes recorded");
      return;
    }
    const api = this.api(id);
    const same = (a: ChVolume, b: ChVolume) => a.id === b.id && a.serial === b.serial && a.readonly === b.readonly;
    for (const v of r.volumes.filter((v) => !want.some((w) => same(v, w)))) {
      const path = volumePath(this.#volumesDir, v.id);
      // Its disk's id: the configuration's while it is there, else bcd's own (a removal the guest has not finished).
      const disk = (await api.info()).config.disks?.find((d) => d.path === path)?.id ?? volumeDiskId(v.id);
      let out: "released" | "pending";
      try {
        out = await unplugDevice(api, disk);
      } catch (e) {
        if (e instanceof ChApiError) throw new RuntimeRefused("vmm-refused", `${id}: ${e.message}`, { cause: e });
        throw e;
      }
      if (out === "pending") {
        // Still open in the guest: the record keeps it (so does the one-writer hold), and its entry stays.
        throw new DetachPending(`${id}: the guest has not released ${disk} (volume ${v.id}) yet`);
      }
      r = await this.#writeVolumes(id, r, r.volumes.filter((x) => x !== v));
      if (!r.volumes.some((x) => x.id === v.id)) await this.#access.revokeFile(path, r.uid);
      if (r.volumes.length === 0) await this.#access.revokeFile(this.#volumesDir, r.uid);
      this.#o.log?.info({ instance: id, volume: v.id }, "cloud-hypervisor: volume unplugged");
    }
    for (const v of want.filter((w) => !r.volumes.some((x) => same(x, w)))) {
      await this.#grantVolume(v, r.uid);
      await this.#apiCall(id, async (a) => void await a.addDisk(_volumeDisk(this.#volumesDir, v)));
      r = await this.#writeVolumes(id, r, [...r.volumes, v]);
      this.#o.log?.info({ instance: id, volume: v.id }, "cloud-hypervisor: volume hot-plugged");
    }
  }

  /** A grown volume resized under a running or paused VM (`vm.resize-disk`); a stopped one sees it at its start. */
  async growVolume(id: string, volumeId: string, bytes: number): Promise<void> {
    await this.#holds.free(id);
    const r = await this.#managed(id);
    if (!r.volumes.some((v) => v.id === volumeId)) {
      throw new RuntimeRefused("no-volume", `${id}: volume ${volumeId} is not attached`);
    }
    if ((await this.#state(id)) === "stopped") return;
    const path = volumePath(this.#volumesDir, volumeId);
    const disk = (await this.api(id).info()).config.disks?.find((d) => d.path === path)?.id;
    if (!disk) throw new RuntimeRefused("no-disk", `${id}: the VMM has no disk for volume ${volumeId}`);
    await this.#apiCall(id, (a) => a.resizeDisk(disk, bytes));
  }

  /** The guest's balloon (`ch_balloon.ts`); a VM defined without one is `NoBalloon`. */
  async readBalloon(id: string): Promise<BalloonReading> {
    await this.#holds.free(id);
    const r = await this.#managed(id);
    return await readChBalloon(id, r, this.api(id), () => this.#o.host.memory(id));
  }

  /** Leaves the guest `bytes` of its memory with `vm.resize`'s `desired_balloon` (`ch_balloon.ts`). */
  async setBalloon(id: string, bytes: number): Promise<void> {
    await this.#holds.free(id);
    const r = await this.#managed(id);
    await setChBalloon(id, r, this.api(id), bytes);
  }

  /**
   * One identity rebind try (`ch_rebind.ts`): the 1 MiB disk hot-added as `vdz` with serial `bc-rebind` (its file
   * `rw` to the VMM's user for the try only), the answer awaited, then removed, zeroed and deleted either way.
   */
  async rebind(id: string, image: Uint8Array, nonce: string): Promise<boolean> {
    await this.#holds.free(id);
    const r = await this.#managed(id);
    return await chRebind(
      {
        id,
        instanceDir: this.instanceDir(id),
        uid: r.uid,
        api: this.api(id),
        access: this.#access,
        state: () => this.#state(id),
        clock: this.#clock,
        log: this.#o.log,
      },
      image,
      nonce,
    );
  }

  async delete(id: string): Promise<void> {
    await this.#holds.free(id);
    await this.stop(id);
    // A destroy hands the GPUs back to their host driver, even when the spec dropped one meanwhile (the record's).
    _check(await this.#o.host.unvfio(id), id);
    await Deno.remove(this.instanceDir(id), { recursive: true }).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }

  async grow(id: string, bytes: number): Promise<void> {
    if (!Number.isSafeInteger(bytes) || bytes < 1) {
      throw new RuntimeRefused("invalid-size", `${id}: disk size ${bytes} is not a positive byte count`);
    }
    const r = await this.#managed(id);
    const disk = `${this.instanceDir(id)}/disk.qcow2`;
    await this.#checkDisk(id, r);
    const have = Number(parseQcow2Header(await readQcow2Prefix(disk)).virtualSize);
    if (bytes === have) return;
    if (bytes < have) {
      throw new RuntimeRefused("disk-shrink", `${id}: the disk is ${have} bytes; ${bytes} would shrink it`);
    }
    if ((await this.#state(id)) === "stopped") {
      await resizeDisk(disk, bytes);
      return;
    }
    const info = await this.api(id).info();
    const diskId = info.config.disks?.find((d) => d.path === disk)?.id;
    if (!diskId) throw new RuntimeRefused("no-disk", `${id}: the VMM has no disk ${disk}`);
    await this.#apiCall(id, (a) => a.resizeDisk(diskId, bytes));
  }
}

/**
 * The configuration bcd sends at `vm.create` (and rebuilds a restore around): the firmware, bcd's vCPUs with its
 * pinning, the memory (on huge pages when placed there), the overlay (`backing_files` only for bcd's own overlay,
 * never for a restored disk) and the seed as a read-only `Raw` disk, the serial port on `serial.sock`, no console,
 * `/dev/urandom`, a balloon with free page reporting when placed with one, the GPUs; no NICs.
 */
function _config(dir: string, record: DomainRecord, l: LaunchSpec, overlay: boolean, seed: boolean): VmConfig {
  const pl = l.placement;
  return {
    payload: { firmware: CH_FIRMWARE },
    cpus: {
      boot_vcpus: record.vcpus,
      max_vcpus: record.vcpus,
      ...(pl ? { affinity: _affinity(pl.cpus, record.vcpus) } : {}),
    },
    memory: {
      size: record.memoryBytes,
      ...(pl && pl.hugepages !== "none"
        ? { hugepages: true, hugepage_size: pl.hugepages === "2M" ? 2 * MiB : 1024 * MiB }
        : {}),
    },
    disks: [
      { path: `${dir}/disk.qcow2`, image_type: "Qcow2", backing_files: overlay },
      ...(seed ? [{ path: `${dir}/seed.iso`, image_type: "Raw" as const, readonly: true }] : []),
    ],
    serial: { mode: "Socket", socket: `${dir}/serial.sock` },
    console: { mode: "Off" },
    rng: { src: "/dev/urandom" },
    ...(pl?.balloon ? { balloon: { size: 0, free_page_reporting: true } } : {}),
    devices: l.gpus.map((g) => ({ path: sysfsDevice(g.pciBusId) })),
  };
}

function _chVolume(a: VolumeAttachment): ChVolume {
  return { id: a.volumeId, serial: a.serial, readonly: a.readOnly };
}

/** A volume's disk: `Raw` (never probed), its serial, read-only when attached so, with id {@link volumeDiskId}. */
function _volumeDisk(volumesDir: string, v: ChVolume): DiskConfig {
  return {
    id: volumeDiskId(v.id),
    path: volumePath(volumesDir, v.id),
    image_type: "Raw",
    serial: v.serial,
    readonly: v.readonly,
  };
}

/**
 * The VMM's device id of volume `volumeId`'s disk: `vol-<volume id>`, so that a removal the guest has not finished is
 * found in the device tree by it after the configuration dropped the disk (never `__`-prefixed, which the VMM refuses).
 */
export function volumeDiskId(volumeId: string): string {
  return `vol-${volumeId}`;
}

/** `cfg` with the disks of volumes `was` replaced by those of `now`, after the root disk and the seed. */
function _withVolumes(
  cfg: VmConfig,
  volumesDir: string,
  was: readonly ChVolume[],
  now: readonly ChVolume[],
): VmConfig {
  const old = new Set(was.map((v) => volumePath(volumesDir, v.id)));
  const own = (cfg.disks ?? []).filter((d) => !old.has(d.path ?? ""));
  return { ...cfg, disks: [...own, ...now.map((v) => _volumeDisk(volumesDir, v))] };
}

/** The files of cloud-hypervisor's own snapshot in a bcd snapshot archive, with their size bounds. */
export function chMemoryFiles(memoryBytes: number): Map<string, number> {
  return new Map([
    [`${CH_STATE_DIR}/config.json`, MAX_SAVED_CONFIG_BYTES],
    [`${CH_STATE_DIR}/state.json`, 256 * MiB],
    [`${CH_STATE_DIR}/memory-ranges`, memoryBytes + 1024 * MiB],
  ]);
}

/** Where a memory snapshot's cloud-hypervisor state lives in the instance directory until its first start. */
export const CH_STATE_DIR = "ch";

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Runs an API call whose failure the ladder steps over; answers whether it went through. */
async function _tolerate(p: Promise<void>): Promise<boolean> {
  try {
    await p;
    return true;
  } catch (e) {
    if (e instanceof ChApiError || e instanceof ChTransportError) return false;
    throw e;
  }
}

/** `cpus.affinity`: each vCPU on one host CPU when the list has exactly as many, else all on the whole list. */
function _affinity(cpulist: string, vcpus: number): { vcpu: number; host_cpus: number[] }[] {
  const cpus = cpulist.split(",").flatMap((p) => {
    const [a, b] = p.split("-").map(Number) as [number, number | undefined];
    return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
  });
  return Array.from({ length: vcpus }, (_, v) => ({ vcpu: v, host_cpus: cpus.length === vcpus ? [cpus[v]!] : cpus }));
}
