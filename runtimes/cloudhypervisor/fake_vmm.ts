/**
 * A faithful fake of one cloud-hypervisor VMM's REST API, for tests (cloud-hypervisor is not packaged for these
 * machines). It serves the paths and JSON shapes of the published OpenAPI document (`cloud-hypervisor.yaml`, API 0.3.0)
 * on a unix socket with the VMM's state machine as `vmm/src/lib.rs` and `vmm/src/vm.rs` implement it:
 *
 * | call | needs | then |
 * | --- | --- | --- |
 * | `vm.create` | no configuration yet (else 500 `VM is already created`) | configuration kept, state `Created` |
 * | `vm.boot` | a configuration (else 404 `VM is not created`), no VM (else 500 `VM is already created`) | `Running` |
 * | `vm.pause` / `vm.resume` | a booted VM (else 500 `VM is not running`) in `Running` / `Paused` (else 500 `Invalid transition: InvalidStateTransition(..)`) | `Paused` / `Running` |
 * | `vm.shutdown` | a booted VM (else 500 `VM is not running`) | the VM is gone, the configuration stays: `Created` |
 * | `vm.power-button` | a booted VM | the guest powers off when {@link FakeGuest.honorsPowerButton}: the VMM exits |
 * | `vmm.shutdown` | — | 204, then the VMM exits |
 * | `vm.info` | a configuration (else 404 `VM is not created`) | `{config, state, memory_actual_size}`, and `device_tree` once booted |
 * | `vm.add-disk` / `vm.add-net` | a configuration (404) and an id unique in the configuration and the device tree (409) | cold add 204 before boot, hot add 200 `PciDeviceInfo` |
 * | `vm.remove-device` | a configuration (404), an id in it or in the device tree (404) | gone from the configuration at once; a booted VM's device stays in `device_tree` until the guest ejects it |
 * | `vm.resize` | a configuration (404) | `desired_balloon` sets the balloon's size (`config.balloon.size`; a booted guest's driver follows, see {@link FakeGuest.balloonDriver}); on a booted VM without a balloon device 500 `Missing virtio-balloon…`, on one not booted nothing (`vmm/src/lib.rs` `vm_resize`) |
 * | `vm.resize-disk` | a booted VM (else 500 `Failed resizing a disk image`), a known disk id (else 404) | size kept |
 * | `vm.snapshot` | a booted VM that is `Paused` (else 500 `Trying to snapshot while VM is running`) | `config.json`, `state.json`, `memory-ranges` written to the `file://` directory |
 * | `vm.restore` | no configuration (500), the directory's `config.json`, NIC fds as `net_fds` declares them (else 400) | `Paused` (or `Running` with `resume`); the balloon as the saved device state (`state.json`) left it, whatever the configuration says |
 *
 * Hot-unplug is the guest's to finish, as in `vmm/src/device_manager.rs`: `remove_device` takes the device out of the
 * configuration and asks the guest (ACPI) to eject it, and only the guest's eject (`eject_device`) takes it out of the
 * device tree and closes its file. The fake guest ejects at once while running when it
 * {@link FakeGuest.acksUnplug | acknowledges unplugs}, a paused one when it resumes; a test can play a guest that lets
 * go later ({@link FakeVmm.guestEjects}). A guest that {@link FakeGuest.answersRebind | answers rebinds} does what the
 * guest half does when a disk with serial `bc-rebind` is hot-added to it running: reads `nonce` from the tar at its
 * start and writes `BCREBOUND <nonce>` at the start of its last 4 KiB.
 *
 * Errors carry cloud-hypervisor's body: the error chain as a JSON array of strings. Its confinement is modelled too:
 * the unit runs with `PrivateNetwork=yes`, so a NIC naming a `tap` or carrying no file descriptor cannot be created
 * (500), and only a NIC whose fds came over `SCM_RIGHTS` works. Requests arrive through {@link FakeVmm.handle}, from
 * its own unix listener (plain requests) or from a transport that received file descriptors with them.
 *
 * @module
 */
import type { DiskConfig, NetConfig, VmConfig, VmInfo, VmState } from "./api_types.ts";
import { FdListener } from "./fake_vmm_fds.ts";
import { REBIND_SERIAL } from "../../core/rebind/mod.ts";
import { answerRebindAsGuest } from "../../core/rebind/rebind_testing.ts";

/** How the fake guest behaves. */
export interface FakeGuest {
  /** Whether the guest powers off on the ACPI power button (default true). */
  honorsPowerButton: boolean;
  /** A hung VMM: `vmm.shutdown` answers 204 and the process stays (default false). */
  vmmHangs: boolean;
  /** Whether the guest runs a balloon driver that gives the pages asked for at once (default true). */
  balloonDriver: boolean;
  /** Whether the guest ejects a device `vm.remove-device` asked it to while it runs (default true). */
  acksUnplug: boolean;
  /** Whether the guest answers the identity rebind disk (default false: a silent guest). */
  answersRebind: boolean;
}

/** One request as the VMM's HTTP server sees it. */
export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  readonly body: Uint8Array;
  /** File descriptors received with the request (`SCM_RIGHTS`), in order. */
  readonly fds: readonly number[];
}

/** One response. */
export interface FakeResponse {
  readonly status: number;
  readonly body?: unknown;
}

const API = "Error from API";

function _err(status: number, ...chain: string[]): FakeResponse {
  return { status, body: chain };
}

/** A NIC the VMM holds, with the fds it received for it. */
export interface FakeNic {
  readonly config: NetConfig;
  readonly fds: readonly number[];
}

/** The fake VMM. */
export class FakeVmm {
  readonly guest: FakeGuest;
  /** Every call, as `METHOD op`, in order. */
  readonly calls: string[] = [];
  /** The disks hot-added to the booted VM, in order, as configured (with their ids). */
  readonly hotAdded: DiskConfig[] = [];
  /** Disk sizes set by `vm.resize-disk`, by disk id. */
  readonly diskSizes = new Map<string, number>();
  /** The balloon's `actual` size in bytes: what the guest's driver gave back (`vm.info` subtracts it). */
  balloonBytes = 0;
  readonly exited: Promise<void>;
  #exit!: () => void;
  #exitedNow = false;
  #config: (VmConfig & { disks: DiskConfig[] }) | null = null;
  #nics: FakeNic[] = [];
  #vm: { state: "Running" | "Paused" } | null = null;
  /** Devices removed from the configuration that the guest has not ejected yet (still in the device tree). */
  #ejecting = new Set<string>();
  #listener: FdListener | undefined;

  constructor(readonly socket: string, guest: Partial<FakeGuest> = {}) {
    this.guest = {
      honorsPowerButton: true,
      vmmHangs: false,
      balloonDriver: true,
      acksUnplug: true,
      answersRebind: false,
      ...guest,
    };
    this.exited = new Promise<void>((r) => this.#exit = r);
  }

  /**
   * Starts a fake VMM listening on `socket` (a stale socket file there is replaced, as the VMM does). It listens
   * through `fake_vmm_fds.ts` (FFI `recvmsg`, as `micro_http` reads), so descriptors sent with a request arrive for
   * real; they are closed when the VMM ends. (Not `Deno.listen`: Deno unlinks a unix listener's path when the
   * listener is dropped, which would take the socket of a VMM started on the same path after it.)
   */
  static start(socket: string, guest: Partial<FakeGuest> = {}): Promise<FakeVmm> {
    const v = new FakeVmm(socket, guest);
    try {
      Deno.removeSync(socket);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    v.#listener = FdListener.start(socket, (r) => v.handle(r), () => {
      if (!v.#pendingExit) return false;
      v.#pendingExit = false;
      v.kill();
      return true;
    });
    return Promise.resolve(v);
  }

  /** Whether the VMM process still runs. */
  get alive(): boolean {
    return !this.#exitedNow;
  }

  /** The NICs the VM holds, with their fds. */
  get nics(): readonly FakeNic[] {
    return this.#nics;
  }

  /** Ends the VMM as a killed process would (what `systemctl stop` does): no listener, no connection, no fd left. */
  kill(): void {
    if (this.#exitedNow) return;
    this.#exitedNow = true;
    this.#listener?.close();
    this.#exit();
  }

  #pendingExit = false;

  /** Answers one request (also the entry for requests that arrived with file descriptors). */
  handle(req: FakeRequest): FakeResponse {
    if (this.#exitedNow) return _err(500, "the VMM exited");
    const op = req.path.startsWith("/api/v1/") ? req.path.slice("/api/v1/".length) : "";
    this.calls.push(`${req.method} ${op || req.path}`);
    const route = ROUTES[op];
    if (!route) return _err(404, "Not Found");
    if (route.method !== req.method) return _err(400, "Bad Request");
    let body: unknown = undefined;
    if (route.body) {
      try {
        body = JSON.parse(new TextDecoder().decode(req.body));
      } catch (e) {
        return _err(400, "Failed to deserialize JSON", e instanceof Error ? e.message : String(e));
      }
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        return _err(400, "Failed to deserialize JSON", "invalid type: expected a map");
      }
    }
    return route.run(this, body as Record<string, unknown>, req.fds);
  }

  /** The current `vm.info` answer, or `undefined` before `vm.create`. */
  infoNow(): VmInfo | undefined {
    if (!this.#config) return undefined;
    const size = Number(this.#config.memory?.size ?? 512 * 1024 * 1024);
    return {
      config: { ...this.#config, net: this.#nics.map((n) => n.config) },
      state: this.#vm?.state ?? "Created",
      memory_actual_size: this.#vm ? size - this.balloonBytes : size,
      ...(this.#vm ? { device_tree: this.#deviceTree() } : {}),
    };
  }

  /** The booted VM's device tree: each device and its virtio-pci parent, by id, as `DeviceNode`s. */
  #deviceTree(): Record<string, unknown> {
    const ids = [
      ...this.#config!.disks.map((d) => d.id!),
      ...this.#nics.map((n) => n.config.id!),
      ...this.#ejecting,
    ];
    const tree: Record<string, unknown> = {};
    ids.forEach((id, i) => {
      const pci = `_virtio-pci-${id}`;
      tree[id] = { id, resources: [], parent: pci, children: [] };
      tree[pci] = {
        id: pci,
        resources: [],
        children: [id],
        pci_bdf: `0000:00:${(i + 2).toString(16).padStart(2, "0")}.0`,
      };
    });
    return tree;
  }

  /** The guest ejects device `id` that `vm.remove-device` asked it to (what a guest that held it does at last). */
  guestEjects(id: string): void {
    this.#ejecting.delete(id);
  }

  // The state machine; each method is one route.

  _create(b: Record<string, unknown>): FakeResponse {
    if (typeof b.payload !== "object" || b.payload === null) {
      return _err(400, "Failed to deserialize JSON", "missing field `payload`");
    }
    if (this.#config) return _err(500, API, "The VM could not be created", "VM is already created");
    const cfg = b as unknown as VmConfig;
    this.#config = { ...cfg, disks: (cfg.disks ?? []).map((d, i) => ({ ...d, id: d.id ?? `_disk${i}` })) };
    this.#nics = (cfg.net ?? []).map((n, i) => ({ config: { ...n, id: n.id ?? `_net${i}` }, fds: [] }));
    return { status: 204 };
  }

  _boot(): FakeResponse {
    if (this.#vm) return _err(500, API, "The VM could not boot", "VM is already created");
    if (!this.#config) return _err(404, API, "The VM could not boot", "VM is not created");
    const bad = this.#nics.find((n) => n.fds.length === 0);
    if (bad) {
      return _err(500, API, "The VM could not boot", "Error creating device manager", _noTap(bad.config));
    }
    this.#vm = { state: "Running" };
    this.balloonBytes = this.guest.balloonDriver ? Number(this.#config.balloon?.size ?? 0) : 0;
    return { status: 204 };
  }

  _transition(to: "Paused" | "Running", what: "paused" | "resume"): FakeResponse {
    const top = what === "paused" ? "The VM could not be paused" : "The VM could not resume";
    if (!this.#vm) return _err(500, API, top, "VM is not running");
    if (this.#vm.state === to) {
      const verb = to === "Paused" ? "pause" : "resume";
      return _err(
        500,
        API,
        top,
        `Cannot ${verb} VM`,
        `Failed to ${verb} migratable component`,
        `Invalid transition: InvalidStateTransition(${this.#vm.state}, ${to})`,
      );
    }
    this.#vm.state = to;
    if (to === "Running" && this.guest.acksUnplug) this.#ejecting.clear();
    return { status: 204 };
  }

  _shutdown(): FakeResponse {
    if (!this.#vm) return _err(500, API, "The VM could not shutdown", "VM is not running");
    this.#vm = null;
    this.#ejecting.clear();
    return { status: 204 };
  }

  _powerButton(): FakeResponse {
    if (!this.#vm) return _err(500, API, "Error triggering power button", "VM is not running");
    if (this.guest.honorsPowerButton && this.#vm.state === "Running") {
      // The guest powers off; cloud-hypervisor's control loop then ends the VMM process.
      this.#vm = null;
      this.#pendingExit = true;
    }
    return { status: 204 };
  }

  _delete(): FakeResponse {
    this.#vm = null;
    this.#ejecting.clear();
    this.#config = null;
    this.#nics = [];
    return { status: 204 };
  }

  _vmmShutdown(): FakeResponse {
    if (this.guest.vmmHangs) return { status: 204 };
    this.#vm = null;
    this.#pendingExit = true;
    return { status: 204 };
  }

  _info(): FakeResponse {
    const i = this.infoNow();
    if (!i) return _err(404, API, "The VM info is not available", "VM is not created");
    return { status: 200, body: i };
  }

  _add(kind: "disk" | "net", b: Record<string, unknown>, fds: readonly number[]): FakeResponse {
    const top = kind === "disk"
      ? "The disk could not be added to the VM"
      : "The network device could not be added to the VM";
    if (!this.#config) return _err(404, API, top, "VM is not created");
    const ids = new Set([
      ...this.#config.disks.map((d) => d.id),
      ...this.#nics.map((n) => n.config.id),
      ...this.#ejecting,
    ]);
    const id = typeof b.id === "string"
      ? b.id
      : `_${kind}${kind === "disk" ? this.#config.disks.length : this.#nics.length}`;
    if (ids.has(id)) return _err(409, API, top, "Error validating configuration", `Identifier ${id} is not unique`);
    if (kind === "disk") {
      if (typeof b.path !== "string") return _err(400, API, top, "Error validating configuration", "disk has no path");
      this.#config.disks.push({ ...(b as DiskConfig), id });
      if (this.#vm) this.hotAdded.push({ ...(b as DiskConfig), id });
      if (this.#vm?.state === "Running" && b.serial === REBIND_SERIAL && this.guest.answersRebind) {
        answerRebindAsGuest(String(b.path));
      }
    } else {
      if (fds.length === 0) return _err(500, API, top, "Error from device manager", _noTap(b as NetConfig));
      this.#nics.push({ config: { ...(b as NetConfig), id }, fds: [...fds] });
    }
    if (!this.#vm) return { status: 204 };
    return { status: 200, body: { id, bdf: `0000:00:${(0x10 + ids.size).toString(16).padStart(2, "0")}.0` } };
  }

  _removeDevice(b: Record<string, unknown>): FakeResponse {
    const top = "The device could not be removed from the VM";
    if (!this.#config) return _err(404, API, top, "VM is not created");
    const id = String(b.id);
    const before = this.#config.disks.length + this.#nics.length;
    this.#config.disks = this.#config.disks.filter((d) => d.id !== id);
    this.#nics = this.#nics.filter((n) => n.config.id !== id);
    const removed = this.#config.disks.length + this.#nics.length !== before;
    if (removed && this.#vm) {
      // The guest is asked to eject it; until it does, the device (and its open file) stays in the tree.
      this.#ejecting.add(id);
      if (this.#vm.state === "Running" && this.guest.acksUnplug) this.#ejecting.delete(id);
    }
    if (!removed && !this.#ejecting.has(id)) {
      return _err(
        404,
        API,
        top,
        "Error from device manager",
        `Failed to find device corresponding to the given identifier: ${id}`,
      );
    }
    return { status: 204 };
  }

  _resize(b: Record<string, unknown>): FakeResponse {
    const top = "The VM could not be resized";
    if (!this.#config) return _err(404, API, top, "VM is not created");
    if (b.desired_balloon !== undefined && (this.#vm || this.#config.balloon)) {
      // A VM not booted only has its configuration's size changed (none without a balloon); a booted one asks the
      // device, which a VM without one refuses.
      if (!this.#config.balloon) {
        return _err(500, API, top, "Error from device manager", "Missing virtio-balloon, can't proceed as expected");
      }
      const size = Number(b.desired_balloon);
      this.#config = { ...this.#config, balloon: { ...this.#config.balloon, size } };
      if (this.#vm && this.guest.balloonDriver) this.balloonBytes = size;
    }
    if (b.desired_ram !== undefined) {
      this.#config = { ...this.#config, memory: { ...this.#config.memory, size: Number(b.desired_ram) } };
    }
    if (b.desired_vcpus !== undefined && this.#config.cpus) {
      this.#config = { ...this.#config, cpus: { ...this.#config.cpus, boot_vcpus: Number(b.desired_vcpus) } };
    }
    return { status: 204 };
  }

  _resizeDisk(b: Record<string, unknown>): FakeResponse {
    const top = "The disk could not be resized";
    if (!this.#config) return _err(404, API, top, "VM is not created");
    if (!this.#vm) return _err(500, API, top, "Failed resizing a disk image");
    const id = String(b.id);
    if (!this.#config.disks.some((d) => d.id === id)) {
      return _err(
        404,
        API,
        top,
        "Error from device manager",
        `Failed to find device corresponding to the given identifier: ${id}`,
      );
    }
    this.diskSizes.set(id, Number(b.desired_size));
    return { status: 204 };
  }

  #snapshotFiles(dir: string, cfg: VmConfig): void {
    // The saved configuration's NICs carry no tap name and no fds (fds never survive a process). Written before the
    // answer, as cloud-hypervisor's snapshot is.
    const net = (cfg.net ?? []).map(({ fds: _f, ...n }) => n);
    Deno.writeTextFileSync(`${dir}/config.json`, JSON.stringify({ ...cfg, net }));
    Deno.writeTextFileSync(`${dir}/state.json`, JSON.stringify({ fake: true, balloon: this.balloonBytes }));
    Deno.writeFileSync(`${dir}/memory-ranges`, new Uint8Array(4096));
  }

  _snapshot(b: Record<string, unknown>): FakeResponse {
    const top = "The VM could not be snapshotted";
    if (!this.#vm) return _err(500, API, top, "VM is not running");
    if (this.#vm.state !== "Paused") {
      return _err(
        500,
        API,
        top,
        "Cannot snapshot VM",
        "Failed to snapshot migratable component",
        "Trying to snapshot while VM is running",
      );
    }
    const dir = _fileDir(b.destination_url);
    if (dir === undefined) {
      return _err(500, API, top, "Error sending snapshot", `invalid destination ${b.destination_url}`);
    }
    try {
      this.#snapshotFiles(dir, this.infoNow()!.config);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      return _err(500, API, top, "Error sending snapshot", `${dir}: no such directory`);
    }
    return { status: 204 };
  }

  _restore(
    b: Record<string, unknown>,
    fds: readonly number[],
    saved: VmConfig | undefined,
    state: { balloon?: unknown } | undefined,
  ): FakeResponse {
    const top = "The VM could not be restored";
    if (this.#vm || this.#config) return _err(500, API, top, "VM is already created");
    if (!saved) return _err(500, API, top, "Error restoring VM", "Cannot read config.json");
    const wanted = Array.isArray(b.net_fds) ? b.net_fds as { id: string; num_fds: number }[] : [];
    if (wanted.reduce((n, w) => n + Number(w.num_fds), 0) !== fds.length) return _err(400, "Bad Request");
    let at = 0;
    const nets = (saved.net ?? []).map((n) => {
      const w = wanted.find((x) => x.id === n.id);
      const got = w ? fds.slice(at, at += Number(w.num_fds)) : [];
      return { config: n, fds: got };
    });
    const bad = nets.find((n) => n.fds.length === 0);
    if (bad) return _err(500, API, top, "Error restoring VM", _noTap(bad.config));
    this.#config = { ...saved, disks: [...(saved.disks ?? [])] };
    this.#nics = nets;
    this.#vm = { state: b.resume === true ? "Running" : "Paused" };
    // The devices come back from their saved state: the balloon holds what it held when the snapshot was taken.
    this.balloonBytes = this.#config.balloon ? Number(state?.balloon ?? 0) : 0;
    return { status: 204 };
  }
}

function _noTap(n: NetConfig): string {
  return `Cannot create virtio-net device ${n.id ?? ""}: ${n.tap ? `tap ${n.tap}: ` : ""}` +
    "opening a tap needs CAP_NET_ADMIN in the host's network namespace (the unit runs with PrivateNetwork=yes)";
}

function _fileDir(url: unknown): string | undefined {
  return typeof url === "string" && url.startsWith("file:///") ? url.slice("file://".length) : undefined;
}

type Route = {
  readonly method: "GET" | "PUT";
  readonly body: boolean;
  readonly run: (v: FakeVmm, b: Record<string, unknown>, fds: readonly number[]) => FakeResponse;
};

const ROUTES: Record<string, Route> = {
  "vmm.ping": {
    method: "GET",
    body: false,
    run: () => ({
      status: 200,
      body: { version: "v48.0", build_version: "v48.0-bcd-fake", pid: Deno.pid, features: [] },
    }),
  },
  "vmm.shutdown": { method: "PUT", body: false, run: (v) => v._vmmShutdown() },
  "vm.info": { method: "GET", body: false, run: (v) => v._info() },
  "vm.create": { method: "PUT", body: true, run: (v, b) => v._create(b) },
  "vm.boot": { method: "PUT", body: false, run: (v) => v._boot() },
  "vm.pause": { method: "PUT", body: false, run: (v) => v._transition("Paused", "paused") },
  "vm.resume": { method: "PUT", body: false, run: (v) => v._transition("Running", "resume") },
  "vm.shutdown": { method: "PUT", body: false, run: (v) => v._shutdown() },
  "vm.reboot": {
    method: "PUT",
    body: false,
    run: (v) =>
      v.infoNow()?.state === "Running"
        ? { status: 204 }
        : _err(500, API, "The VM could not reboot", "VM is not running"),
  },
  "vm.power-button": { method: "PUT", body: false, run: (v) => v._powerButton() },
  "vm.delete": { method: "PUT", body: false, run: (v) => v._delete() },
  "vm.add-disk": { method: "PUT", body: true, run: (v, b, fds) => v._add("disk", b, fds) },
  "vm.add-net": { method: "PUT", body: true, run: (v, b, fds) => v._add("net", b, fds) },
  "vm.remove-device": { method: "PUT", body: true, run: (v, b) => v._removeDevice(b) },
  "vm.resize": { method: "PUT", body: true, run: (v, b) => v._resize(b) },
  "vm.resize-disk": { method: "PUT", body: true, run: (v, b) => v._resizeDisk(b) },
  "vm.snapshot": { method: "PUT", body: true, run: (v, b) => v._snapshot(b) },
  "vm.restore": {
    method: "PUT",
    body: true,
    run: (v, b, fds) => {
      const dir = _fileDir(b.source_url);
      const read = <T>(file: string): T | undefined => {
        try {
          return dir === undefined ? undefined : JSON.parse(Deno.readTextFileSync(`${dir}/${file}`)) as T;
        } catch (e) {
          if (!(e instanceof Deno.errors.NotFound) && !(e instanceof SyntaxError)) throw e;
          return undefined;
        }
      };
      return v._restore(b, fds, read<VmConfig>("config.json"), read<{ balloon?: unknown }>("state.json"));
    },
  },
};

export type { VmState };
