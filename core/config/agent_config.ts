/**
 * The agent configuration: what the user wrote in `config.toml` ({@link AgentConfig}), checked key by key, and the
 * resolved form with every default filled in ({@link ResolvedAgentConfig}).
 *
 * @module
 */
import { parse as parseToml, TomlError } from "smol-toml";
import type { KindRole } from "../commands/kinds.ts";
import { HELPER_ROLES, isHelperRole } from "../helper/roles.ts";
import { JOURNAL_DEFAULT_MAX_BYTES, JOURNAL_DEFAULT_MAX_UNACKED_EVENTS } from "../journal/bounds.ts";
import { LOG_LEVELS, type LogLevel } from "../log/mod.ts";

/** A configuration the agent refuses; names the dotted key and, where known, its line. */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(
    message: string,
    readonly key: string | undefined,
    readonly line: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** What the user wrote: every field optional. */
export interface AgentConfig {
  data_dir?: string;
  node_id?: string;
  gateway?: { url?: string; join_token_file?: string; ca_file?: string; handshake_timeout_ms?: number };
  log?: { level?: LogLevel };
  journal?: { max_bytes?: number; max_unacked_events?: number };
  commands?: { unbatched_destructive_per_hour?: number };
  devices?: { cdi_dir?: string; run_dir?: string; cgroup_root?: string; nvidia_smi?: string };
  host?: { units?: boolean; etc_root?: string; sys_root?: string };
  instances?: { balloon_floor_percent?: number; agent_config_url?: string };
  helper?: {
    socket?: string;
    node_group?: string;
    role?: string;
    instance_bridges?: string[];
    libvirt_dynamic_ownership?: boolean;
  };
  site?: { bmc_networks?: string[]; boot_listen?: string; boot_url?: string; ca_file?: string };
  daemon?: { releases_dir?: string; confirm_timeout_ms?: number; release_keys?: string[] };
  telemetry?: { metrics_port?: number };
  plugins?: { dir?: string; user?: string };
  access?: {
    ssh_dir?: string;
    sshd_config?: string;
    sshd?: string;
    ssh_keygen?: string;
    sshd_pid_file?: string;
    reload_command?: string[];
  };
}

/** The configuration the agent runs with. */
export interface ResolvedAgentConfig {
  dataDir: string;
  nodeId: string | undefined;
  gateway: {
    url: string | undefined;
    joinTokenFile: string | undefined;
    caFile: string | undefined;
    /** From connect to `Welcome`, ms (default 30 s; 1 s to 10 minutes). */
    handshakeTimeoutMs: number;
  };
  log: { level: LogLevel };
  journal: { maxBytes: number; maxUnackedEvents: number };
  commands: { unbatchedDestructivePerHour: number };
  devices: { cdiDir: string; runDir: string; cgroupRoot: string; nvidiaSmi: string };
  /** `units`: whether bcd converges the host section; `etcRoot`, `sysRoot`: the helper's roots for the units'
   * files (`<etc>/sysctl.d/90-bcd.conf`, `<etc>/bcd/host/hugepages.json`, `<sys>/kernel/mm/hugepages`), `/etc` and
   * `/sys` unless a test redirects them. */
  host: { units: boolean; etcRoot: string; sysRoot: string };
  /** `agentConfigUrl`: the control plane's fleet config endpoint (seed 004's fetch by version, e.g.
   * `https://cp.example/v1/agent-config`); unset: no fleet config is pushed to instances. */
  instances: { balloonFloorPercent: number; agentConfigUrl: string | undefined };
  /** `socket`: where the root helper listens (the default `/run/bcd/helper.sock`); `nodeGroup`: the group the
   * helper gives its socket to (the agent's), a name or a gid; `role`: the agent role the helper serves, which decides
   * the ops it answers (`core/helper/roles.ts`; unset: `node`'s, every op); `libvirtDynamicOwnership`: what libvirt's
   * `qemu.conf` says (`dynamic_ownership`). The default `false` is the seed's deployment under bcd helper: libvirt
   * relabels nothing and QEMU's user is in the node's group, so the helper opens the domain's files to that group
   * (0660, read-only 0640) and gives the directories on the way group search; `true`: libvirt relabels the files and
   * the directories get `o+x` (`runtimes/libvirt/qemu_access.ts`). */
  helper: {
    socket: string | undefined;
    nodeGroup: string | undefined;
    role: KindRole | undefined;
    instanceBridges: string[];
    libvirtDynamicOwnership: boolean;
  };
  /** `bmcNetworks`: never a `site.httpProxy` target; `bootListen`: where the boot server (iPXE scripts, ISOs, the
   * image cache) listens, `host:port` on the boot network, unset for none; `bootUrl`: the base URL machines and BMCs
   * reach it at (default `http://<boot_listen>`); `caFile`: extra CAs for the image cache's downloads. */
  site: {
    bmcNetworks: string[];
    bootListen: string | undefined;
    bootUrl: string | undefined;
    caFile: string | undefined;
  };
  /**
   * The self-update (`daemon` section, `daemon.upgrade`), the helper's half: `releasesDir` holds `releases/<version>/`
   * and the `current` link the service runs (default `/opt/bcd`); `confirmTimeoutMs` is how long a swapped-in release
   * has to reach `Welcome` before the helper rolls it back (default 5 minutes, 10 s to 1 hour); `releaseKeys` pins the
   * release keys root trusts (raw Ed25519 public keys, base64): when set, the helper checks signatures against these
   * alone, not against the trust bundle in the agent's `identity.json` (a file the unprivileged agent writes).
   */
  daemon: { releasesDir: string; confirmTimeoutMs: number; releaseKeys: Uint8Array[] };
  /** `metricsPort`: the loopback port of the local `GET /metrics` (Prometheus text); 0 (the default): off. */
  telemetry: { metricsPort: number };
  /** The helper's driver plugins (`core/plugins/README.md`): the directory it starts them from (default
   * `/usr/lib/bcd/plugins`) and the user they run as (a name in `/etc/passwd` or a uid, never root; default
   * `nobody`), with that user's primary group and no other. */
  plugins: { dir: string; user: string };
  /** The helper's sshd access files (`runtimes/access/sshd_files.ts`): the ssh directory the files and the drop-in go
   * under, the sshd config the drop-in is checked with, the tools, and how sshd is reloaded (SIGHUP to the pid in
   * `sshdPidFile`, or `reloadCommand` when set). */
  access: {
    sshDir: string;
    sshdConfig: string;
    sshd: string;
    sshKeygen: string;
    sshdPidFile: string;
    reloadCommand: string[] | undefined;
  };
}

type Kind = "string" | "path" | "int" | "bool" | "string[]" | "loglevel" | "url";
type Schema = { [key: string]: Kind | Schema };

const SCHEMA: Schema = {
  data_dir: "path",
  node_id: "string",
  gateway: { url: "url", join_token_file: "path", ca_file: "path", handshake_timeout_ms: "int" },
  log: { level: "loglevel" },
  journal: { max_bytes: "int", max_unacked_events: "int" },
  commands: { unbatched_destructive_per_hour: "int" },
  devices: { cdi_dir: "path", run_dir: "path", cgroup_root: "path", nvidia_smi: "string" },
  host: { units: "bool", etc_root: "path", sys_root: "path" },
  instances: { balloon_floor_percent: "int", agent_config_url: "url" },
  helper: {
    socket: "path",
    node_group: "string",
    role: "string",
    instance_bridges: "string[]",
    libvirt_dynamic_ownership: "bool",
  },
  site: { bmc_networks: "string[]", boot_listen: "string", boot_url: "url", ca_file: "path" },
  daemon: { releases_dir: "path", confirm_timeout_ms: "int", release_keys: "string[]" },
  telemetry: { metrics_port: "int" },
  plugins: { dir: "path", user: "string" },
  access: {
    ssh_dir: "path",
    sshd_config: "path",
    sshd: "string",
    ssh_keygen: "string",
    sshd_pid_file: "path",
    reload_command: "string[]",
  },
};

/** Finds the 1-based line where a dotted key is set, by scanning table headers and `key =` lines. */
function _lineOf(source: string, dotted: string): number | undefined {
  const parts = dotted.split(".");
  const leaf = parts[parts.length - 1]!;
  const table = parts.slice(0, -1).join(".");
  let current = "";
  const lines = source.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      current = header[1]!.replaceAll(/\s+/g, "");
      if (current === dotted) return i + 1;
      continue;
    }
    const m = /^("?)([A-Za-z0-9_.-]+)\1\s*=/.exec(line);
    if (!m) continue;
    const key = m[2]!;
    const full = current === "" ? key : `${current}.${key}`;
    if (full === dotted || (current === table && key === leaf)) return i + 1;
  }
  return undefined;
}

function _fail(source: string, key: string, message: string): never {
  const line = _lineOf(source, key);
  const where = line === undefined ? "" : ` (line ${line})`;
  throw new ConfigError(`config: ${key}${where}: ${message}`, key, line);
}

function _checkValue(source: string, key: string, kind: Kind, value: unknown): void {
  switch (kind) {
    case "string":
      if (typeof value !== "string") _fail(source, key, `expected a string, got ${_typeName(value)}`);
      return;
    case "url":
      if (typeof value !== "string") _fail(source, key, `expected a URL string, got ${_typeName(value)}`);
      try {
        const u = new URL(value);
        if (!["ws:", "wss:", "http:", "https:"].includes(u.protocol)) {
          _fail(source, key, `URL scheme "${u.protocol}" is not ws, wss, http or https`);
        }
      } catch (e) {
        if (e instanceof ConfigError) throw e;
        _fail(source, key, `"${value}" is not a URL`);
      }
      return;
    case "path":
      if (typeof value !== "string") _fail(source, key, `expected a path string, got ${_typeName(value)}`);
      if (!value.startsWith("/")) _fail(source, key, `path "${value}" must be absolute`);
      if (value.includes("\0")) _fail(source, key, "path contains a NUL byte");
      return;
    case "int":
      if (typeof value !== "number" || !Number.isSafeInteger(value)) {
        _fail(source, key, `expected an integer, got ${_typeName(value)}`);
      }
      if (value < 0) _fail(source, key, `must not be negative, got ${value}`);
      return;
    case "bool":
      if (typeof value !== "boolean") _fail(source, key, `expected true or false, got ${_typeName(value)}`);
      return;
    case "string[]":
      if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
        _fail(source, key, `expected an array of strings, got ${_typeName(value)}`);
      }
      return;
    case "loglevel":
      if (typeof value !== "string" || !LOG_LEVELS.includes(value as LogLevel)) {
        _fail(source, key, `expected one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(value)}`);
      }
      return;
  }
}

function _typeName(v: unknown): string {
  if (Array.isArray(v)) return "an array";
  if (v instanceof Date) return "a date";
  if (v === null) return "null";
  return `a ${typeof v}`;
}

function _checkTable(source: string, prefix: string, schema: Schema, table: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(table)) {
    const key = prefix === "" ? k : `${prefix}.${k}`;
    const want = Object.hasOwn(schema, k) ? schema[k] : undefined;
    if (want === undefined) _fail(source, key, "unknown key");
    if (typeof want === "string") {
      _checkValue(source, key, want, v);
    } else {
      if (typeof v !== "object" || v === null || Array.isArray(v) || v instanceof Date) {
        _fail(source, key, `expected a table, got ${_typeName(v)}`);
      }
      _checkTable(source, key, want, v as Record<string, unknown>);
    }
  }
}

/** Parses TOML text into an {@link AgentConfig}, refusing unknown keys, wrong types and relative paths. */
export function parseAgentConfig(source: string): AgentConfig {
  let raw: Record<string, unknown>;
  try {
    raw = parseToml(source) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof TomlError) {
      throw new ConfigError(`config: not valid TOML: ${e.message.split("\n")[0]}`, undefined, e.line, { cause: e });
    }
    throw e;
  }
  _checkTable(source, "", SCHEMA, raw);
  return raw as AgentConfig;
}

function _bound(name: string, value: number | undefined, max: number): number {
  if (value === undefined) return max;
  if (value > max) {
    throw new ConfigError(
      `config: ${name} = ${value} raises the bound ${max}; it may only be lowered`,
      name,
      undefined,
    );
  }
  if (value === 0) throw new ConfigError(`config: ${name} must be at least 1`, name, undefined);
  return value;
}

/** Fills defaults and enforces the cross-field rules (journal bounds may be lowered, never raised). */
export function resolveAgentConfig(cfg: AgentConfig, source = ""): ResolvedAgentConfig {
  const lineWrap = (f: () => number, key: string): number => {
    try {
      return f();
    } catch (e) {
      if (e instanceof ConfigError && source !== "") {
        const line = _lineOf(source, key);
        throw new ConfigError(
          line === undefined ? e.message : e.message.replace(`config: ${key}`, `config: ${key} (line ${line})`),
          key,
          line,
        );
      }
      throw e;
    }
  };
  const group = cfg.helper?.node_group;
  if (group !== undefined && !/^(?:\d{1,10}|[A-Za-z_][A-Za-z0-9_.-]{0,31})$/.test(group)) {
    _fail(source, "helper.node_group", `${JSON.stringify(group)} is not a group name or id`);
  }
  const helperRole = cfg.helper?.role;
  if (helperRole !== undefined && !isHelperRole(helperRole)) {
    _fail(source, "helper.role", `${JSON.stringify(helperRole)} is not one of ${HELPER_ROLES.join(", ")}`);
  }
  const handshake = cfg.gateway?.handshake_timeout_ms ?? 30_000;
  if (handshake < 1000 || handshake > 600_000) {
    _fail(source, "gateway.handshake_timeout_ms", `must be between 1000 and 600000, got ${handshake}`);
  }
  const acu = cfg.instances?.agent_config_url;
  if (acu !== undefined) {
    const u = new URL(acu);
    const loopback = u.hostname === "localhost" || u.hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(u.hostname);
    if (u.protocol !== "https:" && !(u.protocol === "http:" && loopback)) {
      _fail(source, "instances.agent_config_url", `must be https (plain http only to a loopback address), got ${acu}`);
    }
  }
  const floor = cfg.instances?.balloon_floor_percent ?? 50;
  const bootListen = cfg.site?.boot_listen;
  if (bootListen !== undefined && !/^(?:\[[0-9a-fA-F:.]+\]|[^:\[\]]+):\d{1,5}$/.test(bootListen)) {
    _fail(source, "site.boot_listen", `${JSON.stringify(bootListen)} is not host:port ([v6]:port for IPv6)`);
  }
  if (floor < 10 || floor > 100) {
    _fail(source, "instances.balloon_floor_percent", `must be between 10 and 100, got ${floor}`);
  }
  return {
    dataDir: cfg.data_dir ?? "/var/lib/bcd",
    nodeId: cfg.node_id,
    gateway: {
      url: cfg.gateway?.url,
      joinTokenFile: cfg.gateway?.join_token_file,
      caFile: cfg.gateway?.ca_file,
      handshakeTimeoutMs: handshake,
    },
    log: { level: cfg.log?.level ?? "info" },
    journal: {
      maxBytes: lineWrap(
        () => _bound("journal.max_bytes", cfg.journal?.max_bytes, JOURNAL_DEFAULT_MAX_BYTES),
        "journal.max_bytes",
      ),
      maxUnackedEvents: lineWrap(
        () => _bound("journal.max_unacked_events", cfg.journal?.max_unacked_events, JOURNAL_DEFAULT_MAX_UNACKED_EVENTS),
        "journal.max_unacked_events",
      ),
    },
    commands: { unbatchedDestructivePerHour: cfg.commands?.unbatched_destructive_per_hour ?? 0 },
    devices: {
      cdiDir: cfg.devices?.cdi_dir ?? "/etc/cdi",
      runDir: cfg.devices?.run_dir ?? "/run/bcd",
      cgroupRoot: cfg.devices?.cgroup_root ?? "/sys/fs/cgroup",
      nvidiaSmi: cfg.devices?.nvidia_smi ?? "nvidia-smi",
    },
    host: {
      units: cfg.host?.units ?? true,
      etcRoot: cfg.host?.etc_root ?? "/etc",
      sysRoot: cfg.host?.sys_root ?? "/sys",
    },
    instances: { balloonFloorPercent: floor, agentConfigUrl: cfg.instances?.agent_config_url },
    helper: {
      socket: cfg.helper?.socket,
      nodeGroup: group,
      role: helperRole,
      instanceBridges: cfg.helper?.instance_bridges ?? [],
      libvirtDynamicOwnership: cfg.helper?.libvirt_dynamic_ownership ?? false,
    },
    site: {
      bmcNetworks: cfg.site?.bmc_networks ?? [],
      bootListen,
      bootUrl: cfg.site?.boot_url?.replace(/\/+$/, ""),
      caFile: cfg.site?.ca_file,
    },
    daemon: _daemon(cfg, source),
    telemetry: { metricsPort: _port(cfg.telemetry?.metrics_port ?? 0, source) },
    plugins: { dir: cfg.plugins?.dir ?? "/usr/lib/bcd/plugins", user: cfg.plugins?.user ?? "nobody" },
    access: _access(cfg, source),
  };
}

function _port(p: number, source: string): number {
  if (p > 65535) _fail(source, "telemetry.metrics_port", `must be a port (0 to 65535), got ${p}`);
  return p;
}

function _daemon(cfg: AgentConfig, source: string): ResolvedAgentConfig["daemon"] {
  const d = cfg.daemon ?? {};
  const confirm = d.confirm_timeout_ms ?? 300_000;
  if (confirm < 10_000 || confirm > 3_600_000) {
    _fail(source, "daemon.confirm_timeout_ms", `must be between 10000 and 3600000, got ${confirm}`);
  }
  const keys = (d.release_keys ?? []).map((k) => {
    let raw: Uint8Array | undefined;
    try {
      raw = Uint8Array.from(atob(k), (c) => c.charCodeAt(0));
    } catch (e) {
      if (!(e instanceof DOMException)) throw e;
    }
    if (raw === undefined || raw.length !== 32) {
      _fail(source, "daemon.release_keys", `${JSON.stringify(k.slice(0, 60))} is not a base64 Ed25519 public key`);
    }
    return raw;
  });
  return { releasesDir: d.releases_dir ?? "/opt/bcd", confirmTimeoutMs: confirm, releaseKeys: keys };
}

function _access(cfg: AgentConfig, source: string): ResolvedAgentConfig["access"] {
  const a = cfg.access ?? {};
  const sshDir = a.ssh_dir ?? "/etc/ssh";
  if (a.reload_command !== undefined && a.reload_command.length === 0) {
    _fail(source, "access.reload_command", "must name a program (or be left out to SIGHUP the sshd pid)");
  }
  return {
    sshDir,
    sshdConfig: a.sshd_config ?? `${sshDir}/sshd_config`,
    sshd: a.sshd ?? "sshd",
    sshKeygen: a.ssh_keygen ?? "ssh-keygen",
    sshdPidFile: a.sshd_pid_file ?? "/run/sshd.pid",
    reloadCommand: a.reload_command,
  };
}

/** Parses and resolves in one step. */
export function loadAgentConfig(source: string): ResolvedAgentConfig {
  return resolveAgentConfig(parseAgentConfig(source), source);
}
