/**
 * {@link ChHost}: the root side of the `cloud-hypervisor` runtime ({@link ChHostPort}), in process. Every verb names
 * an instance; root reads `instances/<id>/vm.json` strictly itself and builds the rest:
 *
 * - `taps`: each NIC's tap `tapName(id, i)` on its bridge, which must be one of `[helper] instance_bridges`
 *   (`bridge-not-allowed`; no list refuses every tap), persistent and owned by the node; an interface of that name
 *   that is not a tap is refused `not-a-tap`.
 * - `launch`: the files checked as root (the disk and seed regular files, no symlink; the overlay naming exactly the
 *   recorded base, `checkOverlay`; the base image bcd's own), the VMM uid not another running unit's (`uid-in-use`),
 *   then `systemd-run` with `unit.ts`'s properties and root's own `cloud-hypervisor` binary. Each of the record's
 *   volumes must be a regular file at `<data dir>/volumes/<id>.raw` (the path built from the id; `bad-volume`); each
 *   is bound into the unit, and the store's directory too, for the volumes hot-plugged while it runs.
 * - `addNet`/`restore`: opens the taps and sends the API request with their fds over `SCM_RIGHTS`
 *   ({@link FdSender}), closing root's copies after.
 * - `stop`: `systemctl stop`, then `systemctl show`'s state.
 * - `memory`: the `anon` figure of the unit's cgroup `memory.stat` (`vmm_memory.ts`), the balloon loop's usage reading
 *   (root reads it: the node reads nothing under `/sys`).
 *
 * - `vfio`/`unvfio`: the record's GPUs' whole IOMMU groups to `vfio-pci` and `/dev/vfio/<group>` to the VMM's uid
 *   (`vfio.ts`), refused `vfio-busy` when another running VMM's user holds a group (read from `/dev/vfio`); back to
 *   root and the host driver, never a group a running VMM's user holds. `stop` gives back exactly the groups the
 *   stopped unit's user held.
 *
 * Written down so nobody assumes more: root neither chowns the instance's files nor grants ACL entries (the node
 * grants them, `vmm_access.ts`); "a GPU holding work" is a GPU a device hold's files name (`busyGpus`, refused
 * `gpu-busy`), not a look at the processes on it.
 *
 * @module
 */
import { checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import { INSTANCE_ID, type Refusal } from "../../core/converge/instances/domain_plan.ts";
import { tapName } from "../../core/converge/instances/tap_name.ts";
import { ChApiError, parseAnswer } from "./api_client.ts";
import { encodeRequest, type Http1Message } from "./http1.ts";
import type { ChHostPort, HostOutcome } from "../../core/converge/instances/ch_port.ts";
import { type ChUnits, type UnitState } from "./units.ts";
import { systemdRunArgs, unitName } from "./unit.ts";
import { nicConfig } from "./restore_config.ts";
import { type ChRecord, ChRecordRefused, readRecord, RECORD_FILE, volumePath } from "./vm_record.ts";
import { type VfioBinder, VfioRefused } from "./vfio.ts";
import { CgroupVmmMemory, type VmmMemory } from "./vmm_memory.ts";

/** Root's taps. */
export interface TapPort {
  /** Creates `name` as a persistent tap owned by `owner` on `bridge`, up; an existing tap is kept (re-bridged). */
  ensure(name: string, bridge: string, owner: number): Promise<void>;
  /** Whether an interface `name` exists, and whether it is a tap. */
  kind(name: string): Promise<"tap" | "other" | "none">;
  /** Deletes tap `name`; an absent one is nothing to do. */
  remove(name: string): Promise<void>;
  /** Opens tap `name` (`TUNSETIFF`) and answers the file descriptor; {@link TapPort.close} it after. */
  open(name: string): Promise<number>;
  close(fd: number): void;
}

/** Sends one HTTP request with file descriptors (`SCM_RIGHTS`) on a unix socket and reads the answer. */
export interface FdSender {
  send(socket: string, request: Uint8Array, fds: readonly number[]): Promise<Http1Message>;
}

/** Options of {@link ChHost}. */
export interface ChHostOptions {
  /** `<data dir>/cloud-hypervisor`. */
  readonly runtimeDir: string;
  /** `<data dir>/volumes`. */
  readonly volumesDir: string;
  /** Root's `cloud-hypervisor` binary. */
  readonly binary: string;
  /** `[helper] instance_bridges`; `undefined` refuses every tap. */
  readonly bridges: readonly string[] | undefined;
  /** The uid that owns the taps (the node's). */
  readonly tapOwner: number;
  readonly underHelper: boolean;
  readonly units: ChUnits;
  readonly taps: TapPort;
  readonly fds: FdSender;
  /** VFIO binding; without it every GPU is refused `gpu-unsupported`. */
  readonly vfio?: VfioBinder;
  /** This host's GPUs' bus ids (the inventory's), which alone may be passed through. */
  readonly hostGpus?: () => Promise<readonly string[]>;
  /** The UUIDs of the GPUs root sees holding work (the device holds' files); such a GPU is never bound. */
  readonly busyGpus?: () => Promise<readonly string[]>;
  /** The VMMs' memory use (default the units' cgroup `memory.stat` under `/sys/fs/cgroup`). */
  readonly vmmMemory?: VmmMemory;
}

function _refused(reason: string, message: string): HostOutcome {
  return { refused: { reason, message } satisfies Refusal };
}

/** The root side, in process. */
export class ChHost implements ChHostPort {
  readonly #o: ChHostOptions;
  constructor(opts: ChHostOptions) {
    this.#o = opts;
  }

  #paths(id: string) {
    return { instanceDir: `${this.#o.runtimeDir}/instances/${id}`, volumesDir: this.#o.volumesDir };
  }

  /** The record, or a refusal (`invalid-instance-id`, `no-record`, `invalid-record`). */
  async #record(id: string): Promise<ChRecord | HostOutcome> {
    if (!INSTANCE_ID.test(id)) return _refused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    try {
      const r = await readRecord(id, this.#paths(id));
      return r ?? _refused("no-record", `instance ${id} has no ${RECORD_FILE}: not bcd's`);
    } catch (e) {
      if (e instanceof ChRecordRefused) return _refused(e.reason, e.message);
      throw e;
    }
  }

  async taps(id: string): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    for (const [i, n] of r.nics.entries()) {
      if (!this.#o.bridges) {
        return _refused("bridge-not-allowed", `[helper] instance_bridges is not set: every instance tap is refused`);
      }
      if (!this.#o.bridges.includes(n.bridge)) {
        return _refused(
          "bridge-not-allowed",
          `nics[${i}] is on bridge ${JSON.stringify(n.bridge)}, not one of [helper] instance_bridges`,
        );
      }
      const name = tapName(id, i);
      if ((await this.#o.taps.kind(name)) === "other") {
        return _refused("not-a-tap", `interface ${name} exists and is not a tap`);
      }
    }
    for (const [i, n] of r.nics.entries()) await this.#o.taps.ensure(tapName(id, i), n.bridge, this.#o.tapOwner);
    return {};
  }

  async untaps(id: string): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    for (let i = 0; i < r.nics.length; i++) {
      const name = tapName(id, i);
      if ((await this.#o.taps.kind(name)) === "tap") await this.#o.taps.remove(name);
    }
    return {};
  }

  async launch(id: string): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    const dir = this.#paths(id).instanceDir;
    const named = new Set((r.config.disks ?? []).map((d) => d.path));
    for (const f of ["disk.qcow2", "seed.iso"].filter((f) => f === "disk.qcow2" || named.has(`${dir}/${f}`))) {
      const st = await Deno.lstat(`${dir}/${f}`).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return undefined;
        throw e;
      });
      if (!st?.isFile) return _refused("invalid-record", `${dir}/${f} is not a regular file`);
    }
    for (const v of r.volumes) {
      const path = volumePath(this.#o.volumesDir, v.id);
      const st = await Deno.lstat(path).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return undefined;
        throw e;
      });
      if (!st?.isFile) return _refused("bad-volume", `volume ${v.id}: ${path} is missing or not a regular file`);
    }
    const base = r.image ? `${this.#o.runtimeDir}/images/${r.image.sha256}.${r.image.format}` : null;
    if (base) {
      const st = await Deno.lstat(base).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return undefined;
        throw e;
      });
      if (!st?.isFile) return _refused("image-missing", `the base image ${base} is not a regular file`);
    }
    try {
      await checkOverlay(`${dir}/disk.qcow2`, base && r.image ? { path: base, format: r.image.format } : null);
    } catch (e) {
      if (e instanceof ImageRefused) return _refused(e.reason, `${id}: ${e.message}`);
      throw e;
    }
    const clash = await this.#uidHolder(id, r.uid);
    if (clash) return _refused("uid-in-use", `uid ${r.uid} is the running VMM ${clash}'s`);
    const unit = unitName(id);
    if ((await this.#o.units.state(unit)) === "active") return {};
    await this.#o.units.run(systemdRunArgs({
      id,
      uid: r.uid,
      runtimeDir: this.#o.runtimeDir,
      vcpus: r.vcpus,
      memoryBytes: r.memoryBytes,
      hugepages: r.config.memory?.hugepages === true,
      gpus: r.gpus.length > 0,
      allowedCpus: r.placement?.cpus ?? "",
      allowedMems: r.placement?.mems ?? "",
      baseImage: base,
      volumes: r.volumes.map((v) => ({ path: volumePath(this.#o.volumesDir, v.id), readonly: v.readonly })),
      volumesDir: this.#o.volumesDir,
      underHelper: this.#o.underHelper,
      binary: this.#o.binary,
    }));
    return {};
  }

  /** Another instance whose running unit has `uid`, if any. */
  async #uidHolder(id: string, uid: number): Promise<string | undefined> {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(`${this.#o.runtimeDir}/instances`)];
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
    for (const e of entries) {
      if (e.name === id || !e.isDirectory || !INSTANCE_ID.test(e.name)) continue;
      const other = await readRecord(e.name, this.#paths(e.name)).catch((err) => {
        if (err instanceof ChRecordRefused) return undefined;
        throw err;
      });
      if (other?.uid === uid && (await this.#o.units.state(unitName(e.name))) === "active") return e.name;
    }
    return undefined;
  }

  async addNet(id: string, index: number): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    const nic = r.nics[index];
    if (!Number.isSafeInteger(index) || !nic) return _refused("no-nic", `instance ${id} has no NIC ${index}`);
    const body = JSON.stringify(nicConfig(nic, index));
    return await this.#withFds(id, [index], "vm.add-net", encodeRequest("PUT", "/api/v1/vm.add-net", body));
  }

  async restore(id: string, resume: boolean): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    const dir = `${this.#paths(id).instanceDir}/ch`;
    const body = JSON.stringify({
      source_url: `file://${dir}`,
      resume,
      net_fds: r.nics.map((_, i) => ({ id: `net${i}`, num_fds: 1 })),
    });
    const all = r.nics.map((_, i) => i);
    return await this.#withFds(id, all, "vm.restore", encodeRequest("PUT", "/api/v1/vm.restore", body));
  }

  async #withFds(id: string, nics: number[], op: string, req: Uint8Array): Promise<HostOutcome> {
    const fds: number[] = [];
    try {
      for (const i of nics) fds.push(await this.#o.taps.open(tapName(id, i)));
      const m = await this.#o.fds.send(`${this.#paths(id).instanceDir}/api.sock`, req, fds);
      parseAnswer(op, m);
      return {};
    } catch (e) {
      if (e instanceof ChApiError) return _refused("vmm-refused", `${id}: ${e.message}`);
      throw e;
    } finally {
      for (const fd of fds) this.#o.taps.close(fd);
    }
  }

  async stop(id: string): Promise<HostOutcome & { readonly state?: UnitState }> {
    if (!INSTANCE_ID.test(id)) return _refused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    const unit = unitName(id);
    await this.#o.units.stop(unit);
    const state = await this.#o.units.state(unit);
    // The groups the stopped unit's user held go back to root, read from /dev/vfio itself, not from the record.
    const r = await this.#record(id);
    if (this.#o.vfio && "v" in r && (state === "inactive" || state === "failed")) {
      for (const g of await this.#o.vfio.heldBy(r.uid)) await this.#o.vfio.give(g, 0);
    }
    return { state };
  }

  /** The uids of the VMM units that run now, by instance (from the records, checked against systemd). */
  async #runningUids(except: string): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(`${this.#o.runtimeDir}/instances`)];
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return out;
      throw e;
    }
    for (const e of entries) {
      if (e.name === except || !e.isDirectory || !INSTANCE_ID.test(e.name)) continue;
      const other = await readRecord(e.name, this.#paths(e.name)).catch((err) => {
        if (err instanceof ChRecordRefused) return undefined;
        throw err;
      });
      if (other && (await this.#o.units.state(unitName(e.name))) === "active") out.set(other.uid, e.name);
    }
    return out;
  }

  async vfio(id: string): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    if (r.gpus.length === 0) return {};
    const v = this.#o.vfio;
    if (!v || !this.#o.hostGpus) return _refused("gpu-unsupported", `${id}: this helper passes no GPUs through`);
    const busy = new Set(await this.#o.busyGpus?.() ?? []);
    const held = r.gpus.find((g) => busy.has(g.uuid));
    if (held) {
      return _refused("gpu-busy", `${id}: GPU ${held.uuid} holds work (a device hold names it); not passed through`);
    }
    try {
      const groups = await v.groups(r.gpus.map((g) => g.pciBusId), await this.#o.hostGpus());
      const running = await this.#runningUids(id);
      for (const g of groups) {
        const owner = await v.owner(g.group);
        if (owner !== undefined && owner !== 0 && owner !== r.uid && running.has(owner)) {
          return _refused("vfio-busy", `IOMMU group ${g.group} is held by the running VMM of ${running.get(owner)}`);
        }
      }
      for (const g of groups) {
        await v.bind(g);
        await v.give(g.group, r.uid);
      }
      return {};
    } catch (e) {
      if (e instanceof VfioRefused) return _refused(e.reason, `${id}: ${e.message}`);
      throw e;
    }
  }

  async unvfio(id: string): Promise<HostOutcome> {
    const r = await this.#record(id);
    if (!("v" in r)) return r;
    const v = this.#o.vfio;
    if (r.gpus.length === 0 || !v || !this.#o.hostGpus) return {};
    try {
      const groups = await v.groups(r.gpus.map((g) => g.pciBusId), await this.#o.hostGpus());
      const running = await this.#runningUids("");
      for (const g of groups) {
        const owner = await v.owner(g.group);
        if (owner !== undefined && running.has(owner)) {
          return _refused("vfio-busy", `IOMMU group ${g.group} is held by the running VMM of ${running.get(owner)}`);
        }
      }
      for (const g of groups) {
        await v.give(g.group, 0);
        await v.release(g);
      }
      return {};
    } catch (e) {
      if (e instanceof VfioRefused) return _refused(e.reason, `${id}: ${e.message}`);
      throw e;
    }
  }

  state(id: string): Promise<UnitState> {
    return this.#o.units.state(unitName(id));
  }

  memory(id: string): Promise<number | null> {
    if (!INSTANCE_ID.test(id)) return Promise.reject(new TypeError(`instance id ${JSON.stringify(id)} is not valid`));
    return (this.#o.vmmMemory ?? _cgroupMemory).usedBytes(id);
  }
}

const _cgroupMemory = new CgroupVmmMemory();
