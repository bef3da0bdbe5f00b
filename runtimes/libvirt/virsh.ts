/**
 * The `Virsh` port: the few `virsh` verbs the `libvirt-kvm` runtime uses, at the level of domain names and domain
 * XML. {@link CommandVirsh} runs the real `virsh -c <uri>` (`qemu:///system` on a host); `fake_virsh.ts` keeps domains
 * in memory. `virsh_contract_test.ts` runs one suite against both, the real one against a libvirtd the test starts.
 *
 * {@link Virsh.changeMarker} is libvirt's change marker: a value that moves whenever a domain is defined, undefined,
 * started, stopped, paused, resumed or has its definition or status saved. The real one reads it from the driver's own
 * directories (`/etc/libvirt/qemu` for persistent definitions, `/run/libvirt/qemu` for live status; libvirt replaces
 * each file there by rename, so every change moves the directory's mtime); it answers `undefined`, meaning "list
 * again", where those directories are unknown (another URI) or unreadable, and while the last change is so recent
 * (under {@link MARKER_SETTLE_MS}) that a second change within the file system's timestamp granularity could hide
 * behind it.
 *
 * Failures are {@link VirshError} with a code callers branch on: `no-domain` (libvirt's "failed to get domain" /
 * "Domain not found"), `no-memory` (a start that fails with "Cannot allocate memory": a capacity failure), `invalid`
 * (libvirt refused the request: an XML it cannot parse, a state the verb does not apply to), `failed` (anything else,
 * the tool's message kept).
 *
 * @module
 */
import { denoRunner, type RunResult } from "../nvidia/nvidia_smi.ts";
import { type Clock, realClock } from "../../core/clock.ts";

/** A domain's state as `virsh list --all` prints it, folded to the three bcd knows. */
export type VirshState = "running" | "paused" | "stopped";

/** One row of `virsh list --all`. */
export interface VirshDomain {
  readonly name: string;
  readonly state: VirshState;
}

/** Why a verb failed. */
export type VirshErrorCode = "no-domain" | "no-memory" | "invalid" | "failed";

/** A `virsh` verb that failed; `code` tells the cases apart, the message keeps libvirt's words. */
export class VirshError extends Error {
  override name = "VirshError";
  constructor(readonly code: VirshErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The verbs. Every name is a domain name; bcd names its domains by instance id. */
export interface Virsh {
  /** Every domain of the connection, defined or transient, sorted by name. */
  list(): Promise<VirshDomain[]>;
  /** Every domain's UUID by name (`list --all --uuid --name`). */
  uuids(): Promise<Map<string, string>>;
  /** libvirt's change marker, or `undefined` when there is none to trust now (list again). */
  changeMarker(): Promise<string | undefined>;
  /** The domain's current definition (`dumpxml --inactive`). */
  dumpxml(name: string): Promise<string>;
  /** Defines (or redefines) a persistent domain from `xml`; returns the name it defined. */
  define(xml: string): Promise<string>;
  /** Starts a defined domain, paused when asked. */
  start(name: string, paused: boolean): Promise<void>;
  suspend(name: string): Promise<void>;
  resume(name: string): Promise<void>;
  /** Asks the guest to power off (ACPI); returns at once. */
  shutdown(name: string): Promise<void>;
  /** Pulls the plug. */
  destroy(name: string): Promise<void>;
  /** Removes the definition of a domain that is not running. */
  undefine(name: string): Promise<void>;
  /** Grows a running domain's disk `target` (`vda`) to `bytes`. */
  blockresize(name: string, target: string, bytes: number): Promise<void>;
  /** Plugs the device `xml` into a running or paused domain (`attach-device --live`); the definition is untouched. */
  attachDevice(name: string, xml: string): Promise<void>;
  /**
   * Asks a running or paused domain to unplug the device `xml` (`detach-device --live`). The guest must release it:
   * libvirt answers once it asked (and waited a few seconds), so {@link liveDisks} tells whether it is gone.
   */
  detachDevice(name: string, xml: string): Promise<void>;
  /** The disks the domain has now (`domblklist --details`): target to source file (`""` for none). */
  liveDisks(name: string): Promise<Map<string, string>>;
  /** Saves a running or paused domain's memory state to `file` (`virsh save`); the domain is then shut off. */
  save(name: string, file: string): Promise<void>;
  /**
   * Restores the state in `file` with `xml` as its definition (`virsh restore --xml`), running or paused; `xml` must
   * name the domain the file's header names (libvirt checks name and UUID).
   */
  restore(file: string, xml: string, paused: boolean): Promise<void>;
  /** Sets a running domain's balloon target (`setmem --live`), in KiB. */
  setmem(name: string, kib: number): Promise<void>;
  /** The balloon figures of a running domain (`domstats --balloon`), in KiB; `undefined` when libvirt has none. */
  balloon(name: string): Promise<BalloonStats>;
}

/**
 * `domstats --balloon`'s figures, KiB: the balloon's size and maximum, and the guest driver's statistics (present
 * once the balloon has a statistics period): `available` (the guest's total), `usable` (what it could free without
 * swapping), `unused` (free).
 */
export interface BalloonStats {
  readonly currentKiB: number | undefined;
  readonly maximumKiB: number | undefined;
  readonly availableKiB?: number | undefined;
  readonly usableKiB?: number | undefined;
  readonly unusedKiB?: number | undefined;
}

/** Reads the `balloon.*` figures of {@link BalloonStats} out of `virsh domstats --balloon`. */
export function parseBalloonStats(text: string): BalloonStats {
  const get = (k: string) => {
    const m = new RegExp(`^\\s*balloon\\.${k}=(\\d{1,15})\\s*$`, "m").exec(text);
    return m ? Number(m[1]) : undefined;
  };
  return {
    currentKiB: get("current"),
    maximumKiB: get("maximum"),
    availableKiB: get("available"),
    usableKiB: get("usable"),
    unusedKiB: get("unused"),
  };
}

/**
 * What the guest uses, KiB, from its balloon driver's statistics: its total less what it could free (`usable`), or
 * less what is free (`unused`) on a guest that reports no `usable`; `undefined` without statistics.
 */
export function balloonUsedKiB(s: BalloonStats): number | undefined {
  if (s.availableKiB === undefined) return undefined;
  const spare = s.usableKiB ?? s.unusedKiB;
  return spare === undefined ? undefined : Math.max(0, s.availableKiB - spare);
}

/** `virsh list --all`'s state words, folded. */
const _STATES: Readonly<Record<string, VirshState>> = {
  "running": "running",
  "idle": "running",
  "blocked": "running",
  "in shutdown": "running",
  "paused": "paused",
  "pmsuspended": "paused",
  "shut off": "stopped",
  "crashed": "stopped",
  "dying": "stopped",
};

/** Parses `virsh list --all` (the table with Id, Name, State columns). */
/** `virsh domblklist --details`: target to source (`-` for none is `""`). */
export function parseDomblklist(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\n")) {
    const m = /^\s*(file|block|network|volume|dir|nvme|vhostuser)\s+(disk|cdrom|floppy|lun)\s+(\S+)\s+(.*?)\s*$/.exec(
      line,
    );
    if (m) out.set(m[3]!, m[4] === "-" ? "" : m[4]!);
  }
  return out;
}

export function parseVirshList(text: string): VirshDomain[] {
  const out: VirshDomain[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*(\d+|-)\s+(\S+)\s+(\S.*?)\s*$/.exec(line);
    if (!m) continue;
    const state = _STATES[m[3]!];
    if (state === undefined) throw new VirshError("failed", `virsh list: unknown state ${JSON.stringify(m[3])}`);
    out.push({ name: m[2]!, state });
  }
  return out.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** The code of a failed verb, from libvirt's message. */
export function classifyVirshFailure(stderr: string): VirshErrorCode {
  if (/failed to get domain|Domain not found|no domain with matching/i.test(stderr)) return "no-domain";
  if (/Cannot allocate memory/i.test(stderr)) return "no-memory";
  if (
    /does not match source|without the balloon device|XML error|Failed to define domain|already exists|already active|invalid argument|Requested operation is not valid|unsupported configuration/i
      .test(stderr)
  ) {
    return "invalid";
  }
  return "failed";
}

/** How old libvirt's last change must be before the marker is trusted (ms; timestamps are coarse). */
export const MARKER_SETTLE_MS = 1000;

/** The qemu driver's directories for `qemu:///system` (definitions, live status). */
export const SYSTEM_STATE_DIRS: readonly string[] = ["/etc/libvirt/qemu", "/run/libvirt/qemu"];

/** Options of {@link CommandVirsh}. */
export interface CommandVirshOptions {
  /** The connection (default `qemu:///system`). */
  readonly uri?: string;
  /** The program (default `virsh` on PATH). */
  readonly binary?: string;
  /** Per-verb timeout in ms (default 120 s). */
  readonly timeoutMs?: number;
  /** Where `define` stages its XML (default the system temp directory). */
  readonly tmpDir?: string;
  readonly run?: (cmd: string, args: readonly string[], opts: { timeoutMs: number }) => Promise<RunResult>;
  /** The driver's directories whose mtimes are the change marker (default {@link SYSTEM_STATE_DIRS} for
   * `qemu:///system`, none for another URI: no marker, every listing asks libvirt). */
  readonly stateDirs?: readonly string[];
  /** The clock whose wall time the marker's settle time is measured on (file times are wall times; default real). */
  readonly clock?: Pick<Clock, "now">;
}

/** The real `virsh -c <uri>`. */
export class CommandVirsh implements Virsh {
  readonly uri: string;
  readonly #bin: string;
  readonly #timeout: number;
  readonly #tmp: string | undefined;
  readonly #run: NonNullable<CommandVirshOptions["run"]>;
  readonly #dirs: readonly string[];
  readonly #clock: Pick<Clock, "now">;

  constructor(opts: CommandVirshOptions = {}) {
    this.uri = opts.uri ?? "qemu:///system";
    this.#bin = opts.binary ?? "virsh";
    this.#timeout = opts.timeoutMs ?? 120_000;
    this.#tmp = opts.tmpDir;
    this.#run = opts.run ?? denoRunner;
    this.#dirs = opts.stateDirs ?? (this.uri === "qemu:///system" ? SYSTEM_STATE_DIRS : []);
    this.#clock = opts.clock ?? realClock;
  }

  async changeMarker(): Promise<string | undefined> {
    if (this.#dirs.length === 0) return undefined;
    const parts: string[] = [];
    const now = this.#clock.now();
    for (const d of this.#dirs) {
      let st: Deno.FileInfo;
      try {
        st = await Deno.stat(d);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) return undefined;
        throw e;
      }
      const m = st.mtime?.getTime(), c = st.ctime?.getTime();
      if (m === undefined || c === undefined || Math.max(m, c) > now - MARKER_SETTLE_MS) return undefined;
      parts.push(`${st.dev}:${st.ino}:${m}:${c}`);
    }
    return parts.join(" ");
  }

  async #virsh(...args: string[]): Promise<string> {
    const r = await this.#run(this.#bin, ["-c", this.uri, ...args], { timeoutMs: this.#timeout });
    if (r.code !== 0) {
      const msg = (r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`).replaceAll(/\s*\n\s*/g, "; ");
      throw new VirshError(classifyVirshFailure(msg), `virsh ${args[0]}: ${msg}`);
    }
    return r.stdout;
  }

  async list(): Promise<VirshDomain[]> {
    return parseVirshList(await this.#virsh("list", "--all"));
  }

  async uuids(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const line of (await this.#virsh("list", "--all", "--uuid", "--name")).split("\n")) {
      const m = /^([0-9a-f-]{36})\s+(\S+)\s*$/.exec(line.trim());
      if (m) out.set(m[2]!, m[1]!);
    }
    return out;
  }

  dumpxml(name: string): Promise<string> {
    return this.#virsh("dumpxml", "--inactive", "--", name);
  }

  /** Runs `f` with `xml` staged in a fresh 0600 file of root's own temp directory, removed after. */
  async #staged<T>(xml: string, f: (file: string) => Promise<T>): Promise<T> {
    const dir = await Deno.makeTempDir({ dir: this.#tmp, prefix: "bcd-virsh-" });
    try {
      const file = `${dir}/domain.xml`;
      await Deno.writeTextFile(file, xml, { mode: 0o600 });
      return await f(file);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }

  define(xml: string): Promise<string> {
    return this.#staged(xml, async (file) => {
      const out = await this.#virsh("define", "--validate", file);
      const m = /Domain '?(.+?)'? defined from/.exec(out);
      if (!m) throw new VirshError("failed", `virsh define: unexpected answer ${JSON.stringify(out.slice(0, 200))}`);
      return m[1]!;
    });
  }

  async start(name: string, paused: boolean): Promise<void> {
    await this.#virsh("start", ...(paused ? ["--paused"] : []), "--", name);
  }
  async suspend(name: string): Promise<void> {
    await this.#virsh("suspend", "--", name);
  }
  async resume(name: string): Promise<void> {
    await this.#virsh("resume", "--", name);
  }
  async shutdown(name: string): Promise<void> {
    await this.#virsh("shutdown", "--", name);
  }
  async destroy(name: string): Promise<void> {
    await this.#virsh("destroy", "--", name);
  }
  async undefine(name: string): Promise<void> {
    await this.#virsh("undefine", "--", name);
  }
  async blockresize(name: string, target: string, bytes: number): Promise<void> {
    await this.#virsh("blockresize", "--", name, target, `${bytes}B`);
  }
  async save(name: string, file: string): Promise<void> {
    await this.#virsh("save", "--", name, file);
  }
  attachDevice(name: string, xml: string): Promise<void> {
    return this.#staged(xml, async (file) => {
      await this.#virsh("attach-device", "--live", "--", name, file);
    });
  }
  detachDevice(name: string, xml: string): Promise<void> {
    return this.#staged(xml, async (file) => {
      await this.#virsh("detach-device", "--live", "--", name, file);
    });
  }
  async liveDisks(name: string): Promise<Map<string, string>> {
    return parseDomblklist(await this.#virsh("domblklist", "--details", "--", name));
  }
  restore(file: string, xml: string, paused: boolean): Promise<void> {
    return this.#staged(xml, async (x) => {
      await this.#virsh("restore", "--xml", x, paused ? "--paused" : "--running", "--", file);
    });
  }
  async setmem(name: string, kib: number): Promise<void> {
    await this.#virsh("setmem", "--live", "--", name, `${kib}KiB`);
  }
  async balloon(name: string): Promise<BalloonStats> {
    return parseBalloonStats(await this.#virsh("domstats", "--balloon", "--", name));
  }
}
