/**
 * The privileged half of the `libvirt-kvm` runtime, over a {@link Virsh}: what the root helper's `libvirt.*` ops run
 * (and what a node running as root would run in process). It never takes a path: every path comes from its own
 * `<data dir>/libvirt` and the instance id, and the domain XML is rendered here from a checked {@link DomainPlan}.
 *
 * Before a define it checks, as root, what the node prepared: the instance directory, the overlay and the seed are
 * plain files (never a link or a device), the base image is one plain file named by its digest that names no backing
 * or data file and is not encrypted, and the overlay names exactly that base (or none, for an iso install or a
 * restored disk); the same overlay check runs again before every start. QEMU's user reaches the files by one of two
 * schemes (`qemu_access.ts`, {@link LibvirtHostOptions.qemuAccess}): libvirt relabels them and each directory from the
 * data dir down gets `o+x` (search, never read), or, with libvirt's `dynamic_ownership = 0` under bcd helper, QEMU's
 * user is in the node's group, the directories get group search and the disk, seed, volumes and rebind disk are
 * opened to the group (0660, read-only ones 0640) before a start, a restore or a hot-plug.
 *
 * Listing reads each domain's definition once per UUID and keeps its mark, and keeps the whole listing under libvirt's
 * change marker ({@link Virsh.changeMarker}): while the marker has not moved, an idle pass asks libvirt nothing (two
 * directory stats); when it moved, or there is none to trust, the listing is two `virsh list` calls plus a `dumpxml`
 * of each domain not seen before. The marker is read before the listing, so a change during it moves the marker the
 * next pass compares against. Every verb that changes a domain reads the definition again first, so what it touches
 * is decided on fresh XML.
 *
 * A domain without bcd's metadata is foreign: listed with no plan, and every verb on it is refused
 * `unmanaged-domain` before libvirt is asked. So is a domain whose mark names another node: two nodes sharing one
 * libvirtd each manage only what they defined ({@link LibvirtHostOptions.owner}); until this node's id is known
 * (before it joined) every domain is foreign and a define is refused `no-node-identity`. A start libvirt fails with "Cannot allocate memory" is refused
 * `capacity` (a capacity failure of that instance, not a retry).
 *
 * Volumes (000 §Persistent volumes): a plan's volumes are raw virtio disks on `<data dir>/volumes/<id>.raw`, a path
 * root builds from the volume id; each must be a plain file before a define, a start or an attach. `attachDisk`
 * hot-plugs a volume into a running or paused domain at the first free device and writes the new plan into its
 * definition (`attach-device --live`, then `define`), or the identity rebind disk (`instances/<id>/rebind.raw`, 1 MiB,
 * `vdz`, serial `bc-rebind`) live only; `detachDisk` undoes either once the guest released the disk (until then it
 * answers `detach-pending` and changes nothing: a disk the guest holds stays in the plan and open). `blockresize` with a volume tells the guest that
 * volume grew. Closed again once detached: after a detach, a destroy, an undefine, or a listing that finds a domain
 * stopped that ran before, each volume it had goes back to the volume store's owner (the node), mode 0600, unless
 * another running or paused domain of this node still has it (opened `O_NOFOLLOW`: a link the node put in a volume's
 * place is never followed), and after a save too; after a destroy, a save, an undefine of a stopped domain or such a
 * listing, its disk and seed go back to 0600 too.
 *
 * Memory state (`save`, `restore`): the state file is always `instances/<id>/memory.save`. After `virsh save` it is
 * handed to the owner of the instance directory (the node), mode 0600. Before `virsh restore` the domain must be bcd's,
 * defined and stopped, its files pass the same checks as a start, and the definition embedded in the state file is
 * replaced by the XML rendered here from the domain's plan (`save_image.ts`), which is also passed as `--xml`: libvirt
 * never reads a definition the node wrote, and a state taken from one instance restores into another. `setmem` needs a
 * running domain whose plan asks for a balloon (`no-balloon` otherwise) and a target of 1 KiB to its memory;
 * `domstats` reads such a domain's balloon and the guest's use from its statistics (`no-balloon` without one).
 *
 * @module
 */
import {
  type BalloonFigures,
  type DomainPlan,
  GUEST_CHANNELS,
  type HostDomain,
  type HostOutcome,
  type HotDisk,
  type HotDiskRef,
  type LibvirtHostPort,
  MEMORY_STATE_FILE,
  planProblem,
  type PlanVolume,
  REBIND_DISK,
} from "../../core/converge/instances/domain_plan.ts";
import { lchown } from "node:fs/promises";
import type { DomainState } from "../../core/converge/instances/runtime.ts";
import { checkImage, checkOverlay, ImageRefused } from "../../core/images/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import {
  type DomainMark,
  type DomainPaths,
  type DomainType,
  imagePath,
  instanceDir,
  readMark,
  renderDomainXml,
  renderRebindDisk,
  renderVolumeDisk,
  volumePath,
} from "./domain_xml.ts";
import {
  AccessRefused,
  closeFiles,
  type DomainFile,
  nodeOwner,
  openDirs,
  openFiles,
  type QemuAccess,
  RELABEL,
} from "./qemu_access.ts";
import { rewriteSaveImage, SaveImageRefused } from "./save_image.ts";
import { balloonUsedKiB, type Virsh, type VirshDomain, VirshError } from "./virsh.ts";

/** Options of {@link LibvirtHost}. */
export interface LibvirtHostOptions {
  readonly virsh: Virsh;
  /** The agent's data dir; bcd's libvirt files live under `<dataDir>/libvirt`. */
  readonly dataDir: string;
  readonly domainType: DomainType;
  /**
   * The node this host defines domains for (its node id, written in each domain's mark), or how to find it (the
   * helper reads the node's `identity.json`); `undefined` until the node has joined.
   */
  readonly owner: string | (() => Promise<string | undefined>);
  /** PCI bus ids of the host's GPUs (the inventory's); a hostdev of anything else is refused. */
  readonly hostGpus?: () => Promise<readonly string[]>;
  /** Bridges instance NICs may join (`[helper] instance_bridges`); empty: every instance tap is refused. */
  readonly bridges: readonly string[];
  /**
   * How QEMU's user reaches the domain's files (`qemu_access.ts`): libvirt relabels them (the default, libvirt's
   * `dynamic_ownership = 1`), or QEMU's user is in the node's group (`dynamic_ownership = 0`, the seed's deployment
   * under bcd helper: `[helper] libvirt_dynamic_ownership = false`).
   */
  readonly qemuAccess?: QemuAccess;
  readonly log?: Logger;
}

const _refused = (reason: string, message: string): HostOutcome => ({ refused: { reason, message } });
const _OK: HostOutcome = {};

/** A hot-unplug the guest has not acknowledged yet: the disk is still open; asked again next pass. */
export const DETACH_PENDING = "detach-pending";

/** The reason a NIC on a bridge outside `[helper] instance_bridges` is refused with. */
export const BRIDGE_REFUSED = "bridge-not-allowed";

/**
 * The refusal of a plan with a NIC on a bridge `[helper] instance_bridges` does not list (every NIC when the list is
 * empty or missing), or `undefined` when every NIC's bridge is listed.
 */
export function bridgeRefusal(plan: DomainPlan, bridges: readonly string[]): HostOutcome | undefined {
  const nic = plan.nics.findIndex((n) => !bridges.includes(n.bridge));
  if (nic < 0) return undefined;
  const b = JSON.stringify(plan.nics[nic]!.bridge);
  return _refused(
    BRIDGE_REFUSED,
    bridges.length === 0
      ? `nics[${nic}] is on bridge ${b}, but [helper] instance_bridges is not set: the helper refuses every instance tap`
      : `nics[${nic}] is on bridge ${b}, which is not one of [helper] instance_bridges (${bridges.join(", ")})`,
  );
}

/** The root side. */
export class LibvirtHost implements LibvirtHostPort {
  readonly #o: LibvirtHostOptions;
  readonly paths: DomainPaths;
  /** Marks read back, by `name uuid`; `undefined` for a domain without one. */
  readonly #marks = new Map<string, DomainMark | undefined>();
  /** The state of each of this node's domains at the last listing, and its volumes (closed once it stops). */
  readonly #ran = new Map<string, { state: DomainState; volumes: readonly string[] }>();
  /** The last listing and the change marker it was taken under. */
  #listing: { marker: string; domains: VirshDomain[]; uuids: Map<string, string> } | undefined;

  constructor(opts: LibvirtHostOptions) {
    this.#o = opts;
    this.paths = { libvirtDir: `${opts.dataDir}/libvirt`, volumesDir: `${opts.dataDir}/volumes` };
  }

  get domainType(): DomainType {
    return this.#o.domainType;
  }

  /** This node's id, or `undefined` before it joined. */
  async #owner(): Promise<string | undefined> {
    const o = this.#o.owner;
    return typeof o === "string" ? o : await o();
  }

  /** The plan when `mark` is this node's, else `undefined` (a foreign domain). */
  #mine(mark: DomainMark | undefined, owner: string | undefined, name: string): DomainPlan | undefined {
    if (!mark || owner === undefined || mark.node !== owner) return undefined;
    if (mark.plan.id !== name || planProblem(mark.plan) !== undefined) return undefined;
    return mark.plan;
  }

  async list(): Promise<HostDomain[]> {
    const out: HostDomain[] = [];
    const owner = await this.#owner();
    const { domains, uuids } = await this.#libvirtListing();
    const seen = new Set<string>();
    for (const d of domains) {
      const key = `${d.name} ${uuids.get(d.name) ?? "?"}`;
      seen.add(key);
      let mark: DomainMark | undefined;
      if (this.#marks.has(key)) mark = this.#marks.get(key);
      else {
        mark = await this.#markOf(d.name);
        if (uuids.has(d.name)) this.#marks.set(key, mark);
      }
      out.push({ name: d.name, state: d.state, plan: this.#mine(mark, owner, d.name) });
    }
    for (const k of this.#marks.keys()) if (!seen.has(k)) this.#marks.delete(k);
    await this.#closeStopped(out);
    return out;
  }

  /** Closes the files of each domain that ran at the last listing and is stopped or gone now. */
  async #closeStopped(domains: readonly HostDomain[]): Promise<void> {
    const now = new Map(domains.filter((d) => d.plan).map((d) => [d.name, d]));
    const closing: string[] = [];
    const stopped: string[] = [];
    for (const [name, was] of this.#ran) {
      const d = now.get(name);
      if (was.state !== "stopped" && (!d || d.state === "stopped")) {
        closing.push(...was.volumes);
        stopped.push(name);
      }
    }
    this.#ran.clear();
    for (const d of now.values()) {
      this.#ran.set(d.name, { state: d.state, volumes: (d.plan!.volumes ?? []).map((v) => v.id) });
    }
    for (const id of stopped) await this.#closeDisks(id);
    if (closing.length > 0) await this.#closeVolumes(closing, undefined, domains);
  }

  /** The instance's own disk and seed back to 0600 once its domain stopped (a missing one is passed over). */
  async #closeDisks(id: string): Promise<void> {
    const dir = instanceDir(this.paths, id);
    const closed = await closeFiles([`${dir}/disk.qcow2`, `${dir}/seed.iso`]);
    if (closed.length > 0) this.#o.log?.info({ instance: id }, "libvirt: disk and seed closed again (0600)");
  }

  /**
   * Gives each volume of `ids` back to the volume store's owner, mode 0600, unless a running or paused domain of this
   * node other than `except` still has it (`domains`: a listing taken now, or a fresh one).
   */
  async #closeVolumes(ids: readonly string[], except: string | undefined, domains?: readonly HostDomain[]) {
    const all = domains ?? (await this.list());
    const held = new Set(
      all.filter((d) => d.plan && d.state !== "stopped" && d.name !== except)
        .flatMap((d) => (d.plan!.volumes ?? []).map((v) => v.id)),
    );
    const owner = await this.#volumesDir();
    if (!owner || owner.uid === null || owner.gid === null) return;
    const paths = [...new Set(ids)].filter((id) => !held.has(id)).map((id) => volumePath(this.paths, id));
    for (const p of await closeFiles(paths, { uid: owner.uid, gid: owner.gid })) {
      this.#o.log?.info({ volume: p }, "libvirt: volume closed again (0600, the node's)");
    }
  }

  /** What libvirt holds: the listing kept under an unmoved change marker, else a fresh one. */
  async #libvirtListing(): Promise<{ domains: VirshDomain[]; uuids: Map<string, string> }> {
    const marker = await this.#o.virsh.changeMarker();
    if (marker !== undefined && this.#listing?.marker === marker) return this.#listing;
    const [domains, uuids] = await Promise.all([this.#o.virsh.list(), this.#o.virsh.uuids()]);
    this.#listing = marker === undefined ? undefined : { marker, domains, uuids };
    return { domains, uuids };
  }

  /** Forgets what was read of `name` (it was defined or undefined here). */
  #forget(name: string): void {
    for (const k of this.#marks.keys()) if (k.startsWith(`${name} `)) this.#marks.delete(k);
    this.#listing = undefined;
  }

  /** The mark of a domain, `undefined` for one without (or one that went away meanwhile). */
  async #markOf(name: string): Promise<DomainMark | undefined> {
    let xml: string;
    try {
      xml = await this.#o.virsh.dumpxml(name);
    } catch (e) {
      if (e instanceof VirshError && e.code === "no-domain") return undefined;
      throw e;
    }
    return readMark(xml);
  }

  /** The plan of this node's domain `name`, read fresh; `undefined` for a foreign one or one that went away. */
  async #planOf(name: string): Promise<DomainPlan | undefined> {
    return this.#mine(await this.#markOf(name), await this.#owner(), name);
  }

  /** The domain's plan, or the refusal for a missing or foreign one. */
  async #managed(id: string): Promise<DomainPlan | HostOutcome> {
    const m = await this.#managedState(id);
    return "plan" in m ? m.plan : m;
  }

  /** The domain's plan and state, or the refusal for a missing or foreign one. */
  async #managedState(id: string): Promise<{ plan: DomainPlan; state: DomainState } | HostOutcome> {
    const d = (await this.#o.virsh.list()).find((x) => x.name === id);
    if (!d) return _refused("no-domain", `no domain ${id}`);
    const plan = await this.#planOf(id);
    if (!plan) return _refused("unmanaged-domain", `domain ${id} is not this node's; never touched`);
    return { plan, state: d.state };
  }

  async define(plan: DomainPlan): Promise<HostOutcome> {
    const bad = planProblem(plan);
    if (bad) return _refused("invalid-plan", `${bad[0]} ${JSON.stringify(bad[1])} ${bad[2]}`);
    const owner = await this.#owner();
    if (owner === undefined) {
      return _refused("no-node-identity", `the node has not joined yet; ${plan.id} is not defined without its owner`);
    }
    const names = (await this.#o.virsh.list()).map((d) => d.name);
    if (names.includes(plan.id) && !(await this.#planOf(plan.id))) {
      return _refused("unmanaged-domain", `domain ${plan.id} exists and is not this node's; never defined over`);
    }
    const bridge = bridgeRefusal(plan, this.#o.bridges);
    if (bridge) return bridge;
    if (plan.gpus.length > 0) {
      const host = new Set((await this.#o.hostGpus?.() ?? []).map((b) => b.toLowerCase()));
      const g = plan.gpus.find((g) => !host.has(g.pciBusId.toLowerCase()));
      if (g) return _refused("invalid-plan", `PCI device ${g.pciBusId} is not one of this host's GPUs`);
    }
    const files = await this.#checkFiles(plan);
    if (files.refused) return files;
    const dirs = await this.#openDirs(plan);
    if (dirs.refused) return dirs;
    this.#forget(plan.id);
    await this.#o.virsh.define(renderDomainXml(plan, this.#o.domainType, this.paths, owner));
    this.#o.log?.info({ instance: plan.id, type: this.#o.domainType }, "libvirt: domain defined");
    return _OK;
  }

  /** The files a define or start opens, checked as root. */
  async #checkFiles(plan: DomainPlan): Promise<HostOutcome> {
    const dir = instanceDir(this.paths, plan.id);
    try {
      const st = await Deno.lstat(dir);
      if (!st.isDirectory) return _refused("bad-disk", `${dir} is not a directory`);
      const plain = async (path: string, what: string): Promise<HostOutcome> => {
        const s = await Deno.lstat(path);
        return s.isFile ? _OK : _refused("bad-disk", `${what} ${path} is not a plain file`);
      };
      const disk = await plain(`${dir}/disk.qcow2`, "the disk");
      if (disk.refused) return disk;
      if (plan.seed) {
        const seed = await plain(`${dir}/seed.iso`, "the seed");
        if (seed.refused) return seed;
      }
      const img = plan.image;
      if (img) {
        const base = imagePath(this.paths, img.sha256, img.format);
        const b = await plain(base, "the base image");
        if (b.refused) return b;
        await checkImage(base, img.format);
      }
      for (const v of plan.volumes ?? []) {
        const r = await this.#plainVolume(v.id);
        if (r.refused) return r;
      }
      const backing = img && img.format !== "iso"
        ? { path: imagePath(this.paths, img.sha256, img.format), format: img.format }
        : null;
      await checkOverlay(`${dir}/disk.qcow2`, backing);
      return _OK;
    } catch (e) {
      if (e instanceof ImageRefused) return _refused(e.reason, e.message);
      if (e instanceof Deno.errors.NotFound) {
        return _refused("bad-disk", `a file of ${plan.id} is missing: ${e.message}`);
      }
      throw e;
    }
  }

  /**
   * The volume store's directory when it is one (never a link the node put in its place, which would lead root to
   * another directory's `*.raw` files), else `undefined`.
   */
  async #volumesDir(): Promise<Deno.FileInfo | undefined> {
    try {
      const st = await Deno.lstat(this.paths.volumesDir);
      return st.isDirectory ? st : undefined;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  }

  /** A volume's file must be a plain file (never a link or a device) in the store's own directory. */
  async #plainVolume(id: string): Promise<HostOutcome> {
    const path = volumePath(this.paths, id);
    if (!(await this.#volumesDir())) {
      return _refused("bad-volume", `volume ${id}: ${this.paths.volumesDir} is missing or not a directory`);
    }
    try {
      if ((await Deno.lstat(path)).isFile) return _OK;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return _refused("bad-volume", `volume ${id}: ${path} is missing or not a plain file`);
  }

  /**
   * Hands the guest channels' sockets (`GUEST_CHANNELS`, which QEMU bound as libvirt's user) to the owner of the
   * instance's directory (the node), so that the node may connect to them. `lchown`: a link the node left in its own
   * directory in a socket's place is never followed, and no chmod follows (it would follow one): a socket others may
   * write is logged.
   */
  async #handOverChannels(id: string): Promise<void> {
    const dir = instanceDir(this.paths, id);
    const owner = await Deno.lstat(dir);
    if (owner.uid === null || owner.gid === null) return;
    for (const c of GUEST_CHANNELS) {
      const path = `${dir}/${c.socket}`;
      let st: Deno.FileInfo;
      try {
        st = await Deno.lstat(path);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) continue; // a VMM without the channel (the fake virsh)
        throw e;
      }
      if (!st.isSocket) {
        this.#o.log?.warn({ instance: id, channel: c.name }, "libvirt: a channel's path is no socket; not handed over");
        continue;
      }
      await lchown(path, owner.uid, owner.gid);
      if (st.mode !== null && (st.mode & 0o002) !== 0) {
        this.#o.log?.warn({ instance: id, channel: c.name }, "libvirt: a channel's socket is writable by others");
      }
    }
  }

  /**
   * Opens the directories on the way to QEMU's user (`qemuAccess`: `o+x`, or the node's group and `g+x`): from the
   * data dir down to the instance's and the images', and the volume store when the plan has volumes.
   */
  async #openDirs(plan: DomainPlan): Promise<HostOutcome> {
    const l = this.paths.libvirtDir;
    const dirs = [this.#o.dataDir, l, `${l}/images`, `${l}/instances`, instanceDir(this.paths, plan.id)];
    if ((plan.volumes ?? []).length > 0) dirs.push(this.paths.volumesDir);
    return await this.#accessible(async (access, owner) => await openDirs(dirs, access, owner));
  }

  /**
   * Opens the directories on the way and the files a domain of `plan` opens (its disk, its seed, its volumes) to
   * QEMU's user, before a start or a restore; `files` narrows it to those (a hot-plug).
   */
  async #openFiles(plan: DomainPlan, files?: readonly DomainFile[]): Promise<HostOutcome> {
    const dirs = await this.#openDirs(plan);
    if (dirs.refused) return dirs;
    const dir = instanceDir(this.paths, plan.id);
    const all = files ?? [
      { path: `${dir}/disk.qcow2`, readOnly: false },
      ...(plan.seed ? [{ path: `${dir}/seed.iso`, readOnly: true }] : []),
      ...(plan.volumes ?? []).map((v) => ({ path: volumePath(this.paths, v.id), readOnly: v.readOnly })),
    ];
    return await this.#accessible(async (access, owner) => await openFiles(all, access, owner));
  }

  /** Runs `f` with the scheme and the node; a file root refuses to open to QEMU is the refusal `bad-disk`. */
  async #accessible(f: (access: QemuAccess, owner: { uid: number; gid: number }) => Promise<void>) {
    try {
      await f(this.#o.qemuAccess ?? RELABEL, await nodeOwner(this.#o.dataDir));
      return _OK;
    } catch (e) {
      if (e instanceof AccessRefused) return _refused("bad-disk", e.message);
      throw e;
    }
  }

  async start(id: string, paused: boolean): Promise<HostOutcome> {
    const plan = await this.#managed(id);
    if ("refused" in plan) return plan;
    const files = await this.#checkFiles(plan as DomainPlan);
    if (files.refused) return files;
    const open = await this.#openFiles(plan as DomainPlan);
    if (open.refused) return open;
    this.#listing = undefined;
    try {
      await this.#o.virsh.start(id, paused);
    } catch (e) {
      if (e instanceof VirshError && e.code === "no-memory") return _refused("capacity", e.message);
      throw e;
    }
    await this.#handOverChannels(id);
    this.#o.log?.info({ instance: id, paused }, "libvirt: domain started");
    return _OK;
  }

  /** A verb that opens the domain's files again (a grow): they are checked as root first, as before a start. */
  async #checkedVerb(id: string, f: (virsh: Virsh) => Promise<void>): Promise<HostOutcome> {
    const plan = await this.#managed(id);
    if ("refused" in plan) return plan;
    const files = await this.#checkFiles(plan as DomainPlan);
    if (files.refused) return files;
    this.#listing = undefined;
    await f(this.#o.virsh);
    return _OK;
  }

  async #verb(id: string, f: (virsh: Virsh) => Promise<void>): Promise<HostOutcome> {
    const plan = await this.#managed(id);
    if ("refused" in plan) return plan;
    this.#listing = undefined;
    await f(this.#o.virsh);
    return _OK;
  }

  suspend(id: string): Promise<HostOutcome> {
    return this.#verb(id, (v) => v.suspend(id));
  }
  resume(id: string): Promise<HostOutcome> {
    return this.#verb(id, (v) => v.resume(id));
  }
  shutdown(id: string): Promise<HostOutcome> {
    return this.#verb(id, (v) => v.shutdown(id));
  }
  async destroy(id: string): Promise<HostOutcome> {
    const plan = await this.#managed(id);
    if ("refused" in plan) return plan;
    this.#listing = undefined;
    await this.#o.virsh.destroy(id);
    await this.#closeDisks(id);
    await this.#closeVolumes(((plan as DomainPlan).volumes ?? []).map((v) => v.id), id);
    return _OK;
  }
  async undefine(id: string): Promise<HostOutcome> {
    this.#forget(id);
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    this.#listing = undefined;
    await this.#o.virsh.undefine(id);
    if (m.state === "stopped") await this.#closeDisks(id);
    await this.#closeVolumes((m.plan.volumes ?? []).map((v) => v.id), id);
    return _OK;
  }
  async save(id: string): Promise<HostOutcome> {
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    if (m.state === "stopped") return _refused("not-running", `domain ${id} is not running; no memory to save`);
    const dir = instanceDir(this.paths, id);
    const file = `${dir}/${MEMORY_STATE_FILE}`;
    await Deno.remove(file).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    await this.#o.virsh.save(id, file);
    const owner = await Deno.lstat(dir);
    const st = await Deno.lstat(file);
    if (!st.isFile) return _refused("bad-state-file", `${file} is not a plain file after the save`);
    await Deno.chmod(file, 0o600);
    if (owner.uid !== null && owner.gid !== null && (st.uid !== owner.uid || st.gid !== owner.gid)) {
      await Deno.chown(file, owner.uid, owner.gid);
    }
    this.#forget(id);
    await this.#closeDisks(id);
    await this.#closeVolumes((m.plan.volumes ?? []).map((v) => v.id), id);
    this.#o.log?.info({ instance: id, bytes: st.size }, "libvirt: memory state saved");
    return _OK;
  }

  async restore(id: string, paused: boolean): Promise<HostOutcome> {
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    if (m.state !== "stopped") {
      return _refused("invalid-state", `domain ${id} is ${m.state}; a restore needs it stopped`);
    }
    const files = await this.#checkFiles(m.plan);
    if (files.refused) return files;
    const owner = await this.#owner();
    if (owner === undefined) return _refused("no-node-identity", `the node has not joined yet; ${id} is not restored`);
    const xml = renderDomainXml(m.plan, this.#o.domainType, this.paths, owner);
    const file = `${instanceDir(this.paths, id)}/${MEMORY_STATE_FILE}`;
    try {
      await rewriteSaveImage(file, xml);
    } catch (e) {
      if (e instanceof SaveImageRefused) return _refused(e.reason, `${id}: ${e.message}`);
      if (e instanceof Deno.errors.NotFound) return _refused("bad-state-file", `${id}: no memory state to restore`);
      throw e;
    }
    const open = await this.#openFiles(m.plan);
    if (open.refused) return open;
    this.#listing = undefined;
    try {
      await this.#o.virsh.restore(file, xml, paused);
    } catch (e) {
      if (e instanceof VirshError && e.code === "no-memory") return _refused("capacity", e.message);
      if (e instanceof VirshError && e.code === "invalid") return _refused("restore-refused", e.message);
      throw e;
    }
    await this.#handOverChannels(id);
    this.#o.log?.info({ instance: id, paused }, "libvirt: domain restored from its memory state");
    return _OK;
  }

  async setmem(id: string, kib: number): Promise<HostOutcome> {
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    if (!m.plan.placement?.balloon) return _refused("no-balloon", `domain ${id} has no balloon`);
    const max = m.plan.memoryMiB * 1024;
    if (!Number.isSafeInteger(kib) || kib < 1 || kib > max) {
      return _refused("invalid-size", `balloon target ${kib} KiB is not 1 to the domain's ${max} KiB`);
    }
    if (m.state === "stopped") return _refused("not-running", `domain ${id} is not running`);
    this.#listing = undefined;
    await this.#o.virsh.setmem(id, kib);
    return _OK;
  }

  async domstats(id: string): Promise<HostOutcome & { readonly balloon?: BalloonFigures }> {
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    if (!m.plan.placement?.balloon) return _refused("no-balloon", `domain ${id} has no balloon`);
    if (m.state === "stopped") return _refused("not-running", `domain ${id} is not running`);
    const b = await this.#o.virsh.balloon(id);
    return {
      balloon: {
        currentKiB: b.currentKiB ?? null,
        maximumKiB: b.maximumKiB ?? null,
        usedKiB: balloonUsedKiB(b) ?? null,
      },
    };
  }

  async blockresize(id: string, bytes: number, volume?: string): Promise<HostOutcome> {
    if (!Number.isSafeInteger(bytes) || bytes < 1) {
      return _refused("invalid-plan", `size ${bytes} is not a positive byte count`);
    }
    if (volume === undefined) return this.#checkedVerb(id, (v) => v.blockresize(id, "vda", bytes));
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    const vol = (m.plan.volumes ?? []).find((v) => v.id === volume);
    if (!vol) return _refused("no-volume", `domain ${id} has no volume ${volume} attached`);
    if (m.state === "stopped") return _refused("not-running", `domain ${id} is not running`);
    return this.#checkedVerb(id, (v) => v.blockresize(id, vol.dev, bytes));
  }

  async attachDisk(id: string, disk: HotDisk): Promise<HostOutcome> {
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    if (m.state === "stopped") return _refused("not-running", `domain ${id} is not running; nothing to hot-plug into`);
    if ("rebind" in disk) {
      const path = `${instanceDir(this.paths, id)}/${REBIND_DISK.file}`;
      const st = await Deno.lstat(path).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return undefined;
        throw e;
      });
      if (!st?.isFile || st.size !== REBIND_DISK.bytes) {
        return _refused("bad-disk", `${path} is not a plain file of ${REBIND_DISK.bytes} bytes`);
      }
      const open = await this.#openFiles(m.plan, [{ path, readOnly: false }]);
      if (open.refused) return open;
      this.#listing = undefined;
      await this.#o.virsh.attachDevice(id, renderRebindDisk(this.paths, id));
      this.#o.log?.info({ instance: id }, "libvirt: identity rebind disk attached");
      return _OK;
    }
    const have = m.plan.volumes ?? [];
    if (have.some((v) => v.id === disk.volume.id)) return _OK;
    const used = new Set([...have.map((v) => v.dev), ...(await this.#o.virsh.liveDisks(id)).keys()]);
    const dev = Array.from({ length: 24 }, (_, n) => `vd${String.fromCharCode(98 + n)}`).find((d) => !used.has(d));
    if (dev === undefined) return _refused("too-many-volumes", `domain ${id} has no free device for a volume`);
    const vol: PlanVolume = { ...disk.volume, dev };
    const next: DomainPlan = { ...m.plan, volumes: [...have, vol] };
    const bad = planProblem(next);
    if (bad) return _refused("invalid-plan", `${bad[0]} ${JSON.stringify(bad[1])} ${bad[2]}`);
    const file = await this.#plainVolume(vol.id);
    if (file.refused) return file;
    const owner = await this.#owner();
    if (owner === undefined) return _refused("no-node-identity", `the node has not joined yet`);
    const open = await this.#openFiles(next, [{ path: volumePath(this.paths, vol.id), readOnly: vol.readOnly }]);
    if (open.refused) return open;
    this.#forget(id);
    await this.#o.virsh.attachDevice(id, renderVolumeDisk(this.paths, vol, ""));
    await this.#o.virsh.define(renderDomainXml(next, this.#o.domainType, this.paths, owner));
    this.#o.log?.info({ instance: id, volume: vol.id, dev }, "libvirt: volume attached live");
    return _OK;
  }

  async detachDisk(id: string, disk: HotDiskRef): Promise<HostOutcome> {
    const m = await this.#managedState(id);
    if (!("plan" in m)) return m;
    if ("rebind" in disk) {
      if (m.state === "stopped") return _OK;
      this.#listing = undefined;
      if ((await this.#o.virsh.liveDisks(id)).has(REBIND_DISK.dev)) {
        await this.#o.virsh.detachDevice(id, renderRebindDisk(this.paths, id));
        if ((await this.#o.virsh.liveDisks(id)).has(REBIND_DISK.dev)) {
          return _refused(DETACH_PENDING, `the guest of ${id} has not released ${REBIND_DISK.dev} yet`);
        }
      }
      this.#o.log?.info({ instance: id }, "libvirt: identity rebind disk detached");
      return _OK;
    }
    const have = m.plan.volumes ?? [];
    const vol = have.find((v) => v.id === disk.volume);
    if (!vol) return _OK;
    const owner = await this.#owner();
    if (owner === undefined) return _refused("no-node-identity", `the node has not joined yet`);
    this.#forget(id);
    if (m.state !== "stopped" && (await this.#o.virsh.liveDisks(id)).has(vol.dev)) {
      await this.#o.virsh.detachDevice(id, renderVolumeDisk(this.paths, vol, ""));
      if ((await this.#o.virsh.liveDisks(id)).has(vol.dev)) {
        // Still open in the guest: the plan keeps it (the tracker too), and nothing is closed.
        return _refused(DETACH_PENDING, `the guest of ${id} has not released ${vol.dev} (volume ${vol.id}) yet`);
      }
    }
    const next: DomainPlan = { ...m.plan, volumes: have.filter((v) => v.id !== vol.id) };
    await this.#o.virsh.define(renderDomainXml(next, this.#o.domainType, this.paths, owner));
    await this.#closeVolumes([vol.id], id);
    this.#o.log?.info({ instance: id, volume: vol.id }, "libvirt: volume detached");
    return _OK;
  }
}
