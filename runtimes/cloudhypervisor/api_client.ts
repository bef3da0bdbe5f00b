/**
 * The node's client of one cloud-hypervisor VMM's REST API (`instances/<id>/api.sock`, HTTP/1.1 over a unix stream
 * socket, `/api/v1/<op>`). One connection per request: `Deno.connect({ transport: "unix" })`, the request written
 * whole, one response read with {@link readMessage}'s bounds (a 16 KiB head, a 1 MiB body by default), then closed.
 * Each call has a deadline (`signal`, default 30 s): a VMM that stops answering fails the call instead of holding
 * the converger.
 *
 * Errors callers tell apart: {@link ChApiError} (the VMM answered a non-2xx status; its body, cloud-hypervisor's
 * error chain as a JSON array of strings, is kept in `messages`; `notCreated` for the 404 of a VM never created) and
 * {@link ChTransportError} (`vmm-unreachable`: no socket or nobody listening; `bad-response`: an answer that is not
 * HTTP or not the shape the document promises; `timeout`).
 *
 * @example
 * ```ts
 * const api = new ChApiClient({ socket: `${dir}/api.sock` });
 * await api.create({ payload: { firmware: "/usr/share/cloud-hypervisor/CLOUDHV.fd" }, cpus: { boot_vcpus: 2, max_vcpus: 2 } });
 * await api.boot();
 * (await api.info()).state; // "Running"
 * ```
 *
 * @module
 */
import type {
  DiskConfig,
  NetConfig,
  PciDeviceInfo,
  RestoreConfig,
  VmConfig,
  VmInfo,
  VmmPingResponse,
  VmResize,
} from "./api_types.ts";
import { VM_STATES } from "./api_types.ts";
import { encodeRequest, Http1Error, type Http1Message, readMessage } from "./http1.ts";

/** The VMM answered with a status other than 200 or 204. */
export class ChApiError extends Error {
  override name = "ChApiError";
  constructor(
    readonly op: string,
    readonly status: number,
    /** cloud-hypervisor's error chain, top error first (empty when the body was not one). */
    readonly messages: readonly string[],
  ) {
    super(`cloud-hypervisor ${op}: HTTP ${status}${messages.length ? `: ${messages.join(": ")}` : ""}`);
  }
  /** The VM was never created (`vm.info`, `vm.boot` and the resizes answer 404 then). */
  get notCreated(): boolean {
    return this.status === 404 && this.messages.includes("VM is not created");
  }
}

/** No usable answer came back. */
export class ChTransportError extends Error {
  override name = "ChTransportError";
  constructor(
    readonly reason: "vmm-unreachable" | "bad-response" | "timeout",
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Sends one encoded request and reads one response (the seam for the fd-passing sender and for tests). */
export interface ChTransport {
  roundTrip(request: Uint8Array, signal: AbortSignal): Promise<Http1Message>;
}

/** Options of {@link ChApiClient}. */
export interface ChApiClientOptions {
  /** The API socket's path (`instances/<id>/api.sock`). */
  readonly socket: string;
  /** The most response body bytes (default 1 MiB; `vm.info` of a VM with many devices fits). */
  readonly maxBody?: number;
  /** Each call's deadline when the caller passes no signal (default 30 s). */
  readonly timeoutMs?: number;
  /** Replaces the unix-socket transport (tests). */
  readonly transport?: ChTransport;
}

/** A transport over `Deno.connect({ transport: "unix" })`: one connection per request. */
export class UnixTransport implements ChTransport {
  constructor(readonly path: string, readonly maxBody = 1024 * 1024) {}

  async roundTrip(request: Uint8Array, signal: AbortSignal): Promise<Http1Message> {
    let conn: Deno.UnixConn;
    try {
      conn = await Deno.connect({ transport: "unix", path: this.path });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.ConnectionRefused) {
        throw new ChTransportError("vmm-unreachable", `no VMM listens on ${this.path}`, { cause: e });
      }
      throw e;
    }
    const onAbort = () => _closeQuietly(conn);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      if (signal.aborted) throw new ChTransportError("timeout", `the deadline passed before ${this.path} answered`);
      for (let off = 0; off < request.length;) off += await conn.write(request.subarray(off));
      const got = await readMessage((b) => conn.read(b), { maxBody: this.maxBody });
      if (got === null) throw new ChTransportError("bad-response", `the VMM on ${this.path} closed without answering`);
      return got.message;
    } catch (e) {
      if (signal.aborted) {
        throw new ChTransportError("timeout", `the VMM on ${this.path} did not answer in time`, { cause: e });
      }
      if (e instanceof Http1Error) {
        throw new ChTransportError("bad-response", `the VMM on ${this.path}: ${e.message}`, { cause: e });
      }
      if (e instanceof Deno.errors.ConnectionReset || e instanceof Deno.errors.BrokenPipe) {
        throw new ChTransportError("vmm-unreachable", `the VMM on ${this.path} hung up`, { cause: e });
      }
      throw e;
    } finally {
      signal.removeEventListener("abort", onAbort);
      _closeQuietly(conn);
    }
  }
}

/** Closes `c`; one the abort already closed is nothing to do. */
function _closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}

const dec = new TextDecoder();

/** The client. Every method is one API call and names it in its errors. */
export class ChApiClient {
  readonly #t: ChTransport;
  readonly #timeout: number;

  constructor(opts: ChApiClientOptions) {
    this.#t = opts.transport ?? new UnixTransport(opts.socket, opts.maxBody);
    this.#timeout = opts.timeoutMs ?? 30_000;
  }

  /** `GET /vmm.ping`. */
  async ping(signal?: AbortSignal): Promise<VmmPingResponse> {
    const v = await this.#json("GET", "vmm.ping", undefined, signal);
    if (typeof v !== "object" || v === null || typeof (v as VmmPingResponse).version !== "string") {
      throw new ChTransportError("bad-response", "cloud-hypervisor vmm.ping: the answer has no version");
    }
    return v as VmmPingResponse;
  }

  /** `GET /vm.info`; a VM never created is a {@link ChApiError} with `notCreated`. */
  async info(signal?: AbortSignal): Promise<VmInfo> {
    const v = await this.#json("GET", "vm.info", undefined, signal) as Partial<VmInfo> | null;
    if (
      typeof v !== "object" || v === null || typeof v.config !== "object" || v.config === null ||
      !VM_STATES.includes(v.state as VmInfo["state"]) ||
      (v.memory_actual_size !== undefined && !Number.isSafeInteger(v.memory_actual_size))
    ) {
      throw new ChTransportError("bad-response", "cloud-hypervisor vm.info: the answer is not a VmInfo");
    }
    return v as VmInfo;
  }

  /** `PUT /vm.create` (bcd's configurations carry no NICs: each comes with its fd through `vm.add-net`). */
  create(config: VmConfig, signal?: AbortSignal): Promise<void> {
    return this.#none("vm.create", config, signal);
  }
  /** `PUT /vm.boot`. */
  boot(signal?: AbortSignal): Promise<void> {
    return this.#none("vm.boot", undefined, signal);
  }
  /** `PUT /vm.pause`. */
  pause(signal?: AbortSignal): Promise<void> {
    return this.#none("vm.pause", undefined, signal);
  }
  /** `PUT /vm.resume`. */
  resume(signal?: AbortSignal): Promise<void> {
    return this.#none("vm.resume", undefined, signal);
  }
  /** `PUT /vm.shutdown`: the VM stops; its configuration stays (it can boot again). */
  shutdown(signal?: AbortSignal): Promise<void> {
    return this.#none("vm.shutdown", undefined, signal);
  }
  /** `PUT /vm.power-button`: the ACPI power button; the guest decides. */
  powerButton(signal?: AbortSignal): Promise<void> {
    return this.#none("vm.power-button", undefined, signal);
  }
  /** `PUT /vm.delete`. */
  deleteVm(signal?: AbortSignal): Promise<void> {
    return this.#none("vm.delete", undefined, signal);
  }
  /** `PUT /vmm.shutdown`: the VMM process ends. */
  vmmShutdown(signal?: AbortSignal): Promise<void> {
    return this.#none("vmm.shutdown", undefined, signal);
  }
  /** `PUT /vm.resize` (`desired_balloon` is the balloon's size in bytes: what the guest gives back). */
  resize(r: VmResize, signal?: AbortSignal): Promise<void> {
    if (r.desired_vcpus === undefined && r.desired_ram === undefined && r.desired_balloon === undefined) {
      throw new TypeError("vm.resize needs desired_vcpus, desired_ram or desired_balloon");
    }
    for (const [k, v] of Object.entries(r)) {
      if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new RangeError(`vm.resize ${k} ${v}`);
    }
    return this.#none("vm.resize", r, signal);
  }
  /** `PUT /vm.resize-disk` of the disk `id` to `bytes` (a running VM only). */
  resizeDisk(id: string, bytes: number, signal?: AbortSignal): Promise<void> {
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`vm.resize-disk desired_size ${bytes}`);
    return this.#none("vm.resize-disk", { id, desired_size: bytes }, signal);
  }
  /** `PUT /vm.add-disk`: the device's PCI info when hot-added, `null` when cold-added to a VM not yet booted. */
  addDisk(disk: DiskConfig, signal?: AbortSignal): Promise<PciDeviceInfo | null> {
    return this.#added("vm.add-disk", disk, signal);
  }
  /**
   * `PUT /vm.add-net` without file descriptors. bcd hands taps over `SCM_RIGHTS` (the root helper's sender); this
   * plain form is for the fake VMM's tests and a configuration that names its own backend.
   */
  addNet(net: NetConfig, signal?: AbortSignal): Promise<PciDeviceInfo | null> {
    return this.#added("vm.add-net", net, signal);
  }
  /** `PUT /vm.remove-device`. */
  removeDevice(id: string, signal?: AbortSignal): Promise<void> {
    return this.#none("vm.remove-device", { id }, signal);
  }
  /** `PUT /vm.snapshot` into directory `dir` (`file://` URL); the VM must be paused. */
  snapshot(dir: string, signal?: AbortSignal): Promise<void> {
    return this.#none("vm.snapshot", { destination_url: fileUrl(dir) }, signal);
  }
  /** `PUT /vm.restore` (NIC fds ride with the request through the helper's sender; this form carries none). */
  restore(cfg: RestoreConfig, signal?: AbortSignal): Promise<void> {
    return this.#none("vm.restore", cfg, signal);
  }

  async #added(op: string, body: unknown, signal?: AbortSignal): Promise<PciDeviceInfo | null> {
    const v = await this.#json("PUT", op, body, signal) as Partial<PciDeviceInfo> | null;
    if (v === null) return null;
    if (typeof v !== "object" || typeof v.id !== "string" || typeof v.bdf !== "string") {
      throw new ChTransportError("bad-response", `cloud-hypervisor ${op}: the answer is not a PciDeviceInfo`);
    }
    return { id: v.id, bdf: v.bdf };
  }

  async #none(op: string, body: unknown, signal?: AbortSignal): Promise<void> {
    await this.#json("PUT", op, body, signal);
  }

  /** One call: the parsed JSON body of a 200, `null` for a 204, a {@link ChApiError} for anything else. */
  async #json(method: "GET" | "PUT", op: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    const req = encodeRequest(method, `/api/v1/${op}`, body === undefined ? undefined : JSON.stringify(body));
    const m = await this.#t.roundTrip(req, signal ?? AbortSignal.timeout(this.#timeout));
    return parseAnswer(op, m);
  }
}

/** Reads one API answer: 200 → its JSON, 204 → `null`, else a {@link ChApiError}. */
export function parseAnswer(op: string, m: Http1Message): unknown {
  const [version, statusText] = m.start;
  const status = Number(statusText);
  if (!version.startsWith("HTTP/1.") || !/^\d{3}$/.test(statusText)) {
    throw new ChTransportError("bad-response", `cloud-hypervisor ${op}: ${m.start.join(" ")} is not a status line`);
  }
  const text = dec.decode(m.body);
  if (status === 204) return null;
  if (status === 200) {
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new ChTransportError("bad-response", `cloud-hypervisor ${op}: the 200 body is not JSON`, { cause: e });
    }
  }
  throw new ChApiError(op, status, _errorChain(text));
}

function _errorChain(text: string): string[] {
  try {
    const v: unknown = JSON.parse(text);
    if (Array.isArray(v) && v.every((s) => typeof s === "string")) return v.map((s) => s.slice(0, 1024));
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
  }
  return text ? [text.slice(0, 1024)] : [];
}

/** `file://` URL of an absolute directory, as cloud-hypervisor's snapshot and restore take it. */
export function fileUrl(dir: string): string {
  if (!dir.startsWith("/")) throw new TypeError(`${JSON.stringify(dir)} is not an absolute path`);
  return `file://${dir}`;
}
