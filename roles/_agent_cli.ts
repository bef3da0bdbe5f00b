/**
 * The agent subcommands every daemon role shares: `join` (once, with a one-time token) and `run` (the daemon:
 * journal, session, dispatcher, convergence). A role supplies its wiring: handlers, convergers, capabilities.
 *
 * @module
 */
import type { Role } from "../core/commands/kinds.ts";
import type { HandlerRegistry } from "../core/commands/handlers.ts";
import { ConfigError, loadAgentConfig, type ResolvedAgentConfig } from "../core/config/mod.ts";
import { ConditionSet } from "../core/converge/conditions.ts";
import { type DevicePorts, devicesConverger, registerGpuKinds } from "./_devices.ts";
import type { SectionConverger } from "../core/converge/engine.ts";
import type { InstanceListing } from "../core/converge/instances/mod.ts";
import type { InstancesConvergerView } from "../core/converge/instances/lazy.ts";
import {
  boundsFromConfig,
  Journal,
  type JournalStopped,
  readBootId,
  type SqlDriverFactory,
} from "../core/journal/mod.ts";
import { type Clock, realClock } from "../core/clock.ts";
import type { BackoffOptions } from "../core/session/backoff.ts";
import type { FrameTransport } from "../core/session/transport.ts";
import { createLogger, levelFromEnv, type Logger, stderrDestination } from "../core/log/mod.ts";
import { LogRing } from "../core/commands/kind_handlers/log_ring.ts";
import { parse as parseToml } from "smol-toml";
import { IdentityError, join, loadIdentity, type NodeIdentity } from "../core/session/identity.ts";
import { type EventSink, NodeAgent } from "../core/session/node_agent.ts";
import { connectWebSocket } from "../core/session/ws_client.ts";
import { preconnect, type Preconnected } from "../core/session/preconnect.ts";
import { checkTransportUrl, type TransportUse, UrlRefused } from "../core/session/url_policy.ts";
import type { TunnelPort } from "../core/session/tunnel_frames.ts";
import { SessionSecrets } from "../core/session/secrets.ts";
import type { DevicesConvergerView } from "../core/converge/devices/lazy.ts";
import type { SecretSource } from "../core/converge/instances/user_data.ts";
import type { DialInstance } from "../runtimes/access/instance_dialer.ts";
import { AGENT_VERSION } from "../core/version.ts";
import { enforcesQuorum } from "../core/pki/trust_bundle.ts";
import type { bcd } from "../proto/mod.ts";
import { TelemetryConverger } from "../core/telemetry/converger.ts";
// The OpenTelemetry SDK loads when the telemetry section or metrics_port needs it, never before the first Hello.
import { DeferredTelemetry, loadPullReader } from "../runtimes/telemetry/deferred.ts";
import type { PullReader } from "../runtimes/telemetry/otlp.ts";
import { telemetrySources } from "./_telemetry.ts";
import { HelperError } from "../core/helper/errors.ts";
// The helper's client alone (runtimes/helper/mod.ts also loads its server and host backends: nft, sshd, libvirt),
// and only in a role that has a helper: the sim never loads the helper's protocol, argument tables or client.
import type { HelperClient } from "../runtimes/helper/client.ts";
import { EXIT_INTERNAL, EXIT_OK, printOut, StartRefused, type Subcommand, UsageError, versionCommand } from "./_cli.ts";

/** What the wiring of a role gets. */
export interface WiringContext {
  readonly config: ResolvedAgentConfig;
  readonly dataDir: string;
  readonly bootId: string;
  readonly hostname: string;
  readonly journal: Journal;
  readonly identity: NodeIdentity;
  readonly log: Logger;
  /** The daemon's recent log lines, for `logs.collect`. */
  readonly logRing: LogRing;
  /** The agent's condition set (XID conditions, section conditions). */
  readonly conditions: ConditionSet;
  /** The root helper's client, for a role with {@link RoleWiring.helperSocket} (node, site, ramdisk). */
  readonly helper?: HelperClient;
  /** The session's SecretRequest broker (user data, BMC credentials). */
  readonly secrets: SecretSource;
  /** The running agent, read late (handlers are built before it starts): the spec held and the trust in force. */
  readonly agent: AgentView;
}

/** What a handler may read from the running agent; before it started, no spec and no trust roots. */
export interface AgentView {
  /** The NodeSpec held now, if any. */
  spec(): bcd.v1.NodeSpec.$Properties | undefined;
  /** Whether the trust bundle holds approver keys, so destructive commands pass the quorum. */
  quorumEnforced(): boolean;
}

/** What {@link RoleWiring.instanceConverger} starts. */
export interface InstanceWiring {
  readonly converger: InstancesConvergerView;
  readonly capabilities: readonly string[];
  /**
   * Ends what it started beside the converger (the network rules' integrity timer, the balloon loop) before the
   * helper closes.
   */
  readonly stop?: () => void | Promise<void>;
  /** The moves (`instance.migrate`) in progress, for the `bcd.instance.migration.phase` gauge. */
  readonly migrations?: () => readonly { instance: string; gauge: number }[];
  /** What each ballooned guest lends the host, for `bcd.instance.memory.balloon.reclaimed`. */
  readonly balloons?: () => readonly { instance: string; bytes: number }[];
}

/** What {@link RoleWiring.instanceConverger}'s probe resolves to: the wiring step that needs the open journal. */
export type InstanceWiringStep = (ctx: WiringContext, peers: InstancePeers) => Promise<InstanceWiring>;

/** A role's wiring. */
export interface RoleWiring {
  readonly role: Role;
  readonly defaultDataDir: string;
  readonly capabilities?: readonly string[];
  /**
   * The kinds this role's build handles: what `version` marks handled. `run` refuses to start when the registry it
   * builds (with the GPU kinds of a role with `devices`) holds other kinds, so `version` and `Hello` always agree.
   */
  readonly handles: readonly string[];
  handlers(ctx: WiringContext): HandlerRegistry;
  /** The role's other section convergers; `peers` are the session's SecretRequest broker and the loop's wake. */
  convergers?(
    ctx: WiringContext,
    events: EventSink,
    conditions: ConditionSet,
    peers: Pick<InstancePeers, "secrets" | "wake">,
  ): readonly SectionConverger[];
  /** Every VM the host runtimes know, and whether the listing is complete, for status reports. */
  instances?(ctx: WiringContext): () => InstanceListing;
  /**
   * The `instances` section's converger over the host's runtimes, decided at start in two steps: this probe runs
   * while the journal opens (the node asks its helper which runtimes it has: it needs only the helper and the log),
   * and the wiring it resolves to builds the converger once the journal is open. Its runtimes are advertised in
   * `Hello` with the `instance.*` capabilities they enforce. `stop` ends what it started beside the converger (the
   * network rules' integrity timer) before the helper closes.
   */
  instanceConverger?(early: Pick<WiringContext, "helper" | "log">): Promise<InstanceWiringStep>;
  /** The devices section's host ports; with them the role converges holds and runs `gpu.reset` and `diag.nvml`. */
  devices?(ctx: WiringContext): DevicePorts;
  /** Where the boot id comes from when `BCD_BOOT_ID_PATH` is unset (the sim's simulated boot); the kernel's if absent. */
  bootIdFile?(dataDir: string): Promise<string>;
  /**
   * The root helper's socket, for a privilege-separated role (node, site, ramdisk): the daemon connects before it
   * opens the journal, takes the boot id from the helper (unless `BCD_BOOT_ID_PATH` is set), and refuses to start when
   * the helper cannot be reached, or when `[helper] role` names another role than its own.
   */
  helperSocket?(config: ResolvedAgentConfig): string;
  /** Runs after each `Welcome` (the self-update's confirm). */
  onWelcome?(ctx: WiringContext): () => Promise<void>;
  /** Exec tunnels; `agent` gives the server time (floored at the mark) and the spec held once the agent runs. */
  tunnels?(ctx: WiringContext, agent: TunnelAgentView): TunnelPort;
}

/** What a role's tunnels read from the running agent. */
export interface TunnelAgentView {
  /** Server time, ms: the agent's clock plus the `Welcome` offset, never before the journal's server time mark. */
  serverNow(): Promise<number>;
  /** The instances of the spec held now. */
  instances(): readonly DialInstance[];
  /**
   * Resolves once the pass over the journal's spec that the agent's start began has ended: until then the JWKS and the
   * instances a ticket is checked against are not the held spec's yet (that pass no longer holds the first Hello back).
   */
  ready(): Promise<void>;
}

/**
 * Connects to the helper and reads the boot id through it; a helper that cannot be reached refuses the start, and so
 * does a config whose `[helper] role` (the role the helper serves, read from the same file) is another role's.
 */
async function _openHelper(
  role: Role,
  config: ResolvedAgentConfig,
  socket: string,
  log: Logger,
  bootIdPath: string | undefined,
): Promise<{ helper: HelperClient; bootId: string }> {
  const serves = config.helper.role;
  if (serves !== undefined && serves !== role) {
    throw new StartRefused(
      `[helper] role is "${serves}": the helper on ${socket} serves the ${serves} role, and this is the ${role} role`,
    );
  }
  const [{ HelperClient }, { helperBootId }] = await Promise.all([
    import("../runtimes/helper/client.ts"),
    import("../runtimes/helper/ports.ts"),
  ]);
  const helper = new HelperClient({ socket, log });
  try {
    await helper.connect();
    return { helper, bootId: bootIdPath !== undefined ? await readBootId(bootIdPath) : await helperBootId(helper) };
  } catch (e) {
    helper.close();
    if (!(e instanceof HelperError)) throw e;
    throw new StartRefused(
      `${e.message}; the ${role} reads the boot id, /proc, /sys and root-only files through bcd-helper: start ` +
        `"bcd-helper serve --socket ${socket}" as root first`,
      { cause: e },
    );
  }
}

/** The helper's client of a role wired with {@link RoleWiring.helperSocket}; a wiring bug throws. */
export function helperOf(ctx: Pick<WiringContext, "helper">): HelperClient {
  if (!ctx.helper) throw new Error("this role runs with the root helper; its client is missing");
  return ctx.helper;
}

const DATA_DIR_OPTS = {
  "data-dir": { type: "string" },
  config: { type: "string" },
} as const;

/** The config in force (`--config`, else `BCD_CONFIG`, else `/etc/bcd/config.toml` when readable, else the defaults). */
async function _configText(
  path: string | undefined,
): Promise<{ config: ResolvedAgentConfig; text: string; path?: string }> {
  let p = path;
  if (p === undefined) {
    try {
      p = Deno.env.get("BCD_CONFIG");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotCapable)) throw e;
    }
  }
  if (p === undefined) {
    let text: string | undefined;
    try {
      text = await Deno.readTextFile("/etc/bcd/config.toml");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable)) throw e;
    }
    if (text === undefined) return { config: loadAgentConfig(""), text: "" };
    try {
      return { config: loadAgentConfig(text), text, path: "/etc/bcd/config.toml" };
    } catch (e) {
      if (e instanceof ConfigError) throw new UsageError(`/etc/bcd/config.toml: ${e.message}`, { cause: e });
      throw e;
    }
  }
  try {
    const text = await Deno.readTextFile(p);
    return { config: loadAgentConfig(text), text, path: p };
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`${p}: ${e.message}`, { cause: e });
    if (e instanceof Deno.errors.NotFound) throw new UsageError(`config file ${p} does not exist`);
    throw e;
  }
}

/**
 * The data dir `join` and `run` use, the same for both so a run finds what its join wrote: `--data-dir`, else the
 * `data_dir` the config in force names, else the role's own default (the resolved config's default is the node's
 * `/var/lib/bcd`, which is not the sim's).
 */
export async function configAndDataDir(
  values: Record<string, unknown>,
  w: Pick<RoleWiring, "defaultDataDir">,
): Promise<{ config: ResolvedAgentConfig; dataDir: string; path?: string }> {
  const { config, text, path } = await _configText(values.config as string | undefined);
  const named = (parseToml(text) as { data_dir?: unknown }).data_dir;
  const dataDir = (values["data-dir"] as string | undefined) ??
    (typeof named === "string" ? config.dataDir : undefined) ??
    w.defaultDataDir;
  return { config, dataDir, ...(path !== undefined ? { path } : {}) };
}

function _hostname(): string {
  try {
    return Deno.hostname();
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable) return "unknown";
    throw e;
  }
}

function _bootIdPath(): string | undefined {
  try {
    return Deno.env.get("BCD_BOOT_ID_PATH");
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable) return undefined;
    throw e;
  }
}

/** Throws when the registry's kinds are not exactly the wiring's `handles` (a wiring bug, found at start). */
export function checkHandledKinds(w: Pick<RoleWiring, "role" | "handles">, handlers: HandlerRegistry): void {
  const registered = handlers.kinds();
  const declared = [...w.handles].sort();
  if (registered.join(",") !== declared.join(",")) {
    throw new Error(
      `the ${w.role} role registers handlers for [${registered.join(", ")}] but declares [${declared.join(", ")}] ` +
        "as handled (RoleWiring.handles); version and Hello would disagree",
    );
  }
}

/** A session or join URL the node refuses (plain ws:/http: beyond loopback) is a usage error, said as such. */
function _checkUrl(url: string, use: TransportUse): void {
  try {
    checkTransportUrl(url, use);
  } catch (e) {
    if (e instanceof UrlRefused) throw new UsageError(e.message, { cause: e });
    throw e;
  }
}

/** What the instances converger gets from the rest of the agent. */
export interface InstancePeers {
  /** The session's SecretRequest broker (user data). */
  readonly secrets: SecretSource;
  /** The memory the bound device holds committed (0 on a role without devices). */
  readonly holdsCommittedBytes: () => Promise<number>;
  /** Makes the agent's next converge pass due now. */
  readonly wake: () => void;
}

/** The `join`, `run` and `version` subcommands of a daemon role. */
export function agentCommands(w: RoleWiring): Record<string, Subcommand> {
  return {
    version: versionCommand(w.role, w.handles),
    join: {
      summary: "join the control plane once with a one-time token (generates the node key)",
      options: { ...DATA_DIR_OPTS, token: { type: "string" }, "join-url": { type: "string" } },
      async run({ values }) {
        const { dataDir } = await configAndDataDir(values, w);
        const token = values.token as string | undefined;
        const joinUrl = values["join-url"] as string | undefined;
        if (!token || !joinUrl) throw new UsageError("join needs --token and --join-url");
        if (await loadIdentity(dataDir)) throw new UsageError(`${dataDir} already holds a joined identity`);
        _checkUrl(joinUrl, "join");
        let id: NodeIdentity;
        try {
          id = await join({
            dataDir,
            joinUrl,
            token,
            role: w.role === "sim" ? "node" : w.role,
            hostname: _hostname(),
            agentVersion: AGENT_VERSION,
          });
        } catch (e) {
          if (e instanceof IdentityError) throw new StartRefused(`join: ${e.reason}: ${e.message}`, { cause: e });
          throw e;
        }
        printOut(JSON.stringify({ node_id: id.nodeId, gateway_url: id.gatewayUrl }));
        return EXIT_OK;
      },
    },
    run: {
      summary: "run the daemon: journal, session to the gateway, commands and convergence",
      options: { ...DATA_DIR_OPTS, gateway: { type: "string" }, offline: { type: "boolean" } },
      async run({ values }) {
        const { config, dataDir } = await configAndDataDir(values, w);
        const logRing = new LogRing();
        const log = createLogger({
          level: levelFromEnv(config.log.level),
          base: { role: w.role },
          destination: logRing.tee(stderrDestination()),
        });
        const identity = await loadIdentity(dataDir);
        if (!identity) throw new UsageError(`${dataDir} holds no identity; run "join" first`);
        const opened = w.helperSocket
          ? await _openHelper(w.role, config, w.helperSocket(config), log, _bootIdPath())
          : undefined;
        const bootId = opened?.bootId ?? await readBootId(_bootIdPath() ?? await w.bootIdFile?.(dataDir));
        const url = (values.gateway as string | undefined) ?? config.gateway.url ?? identity.gatewayUrl;
        if (url) _checkUrl(url, "session");
        const caCerts = config.gateway.caFile ? [await Deno.readTextFile(config.gateway.caFile)] : undefined;
        const pull = config.telemetry.metricsPort > 0 ? await loadPullReader() : undefined;
        const { agent, journal, close } = await startAgent(w, {
          config,
          dataDir,
          bootId,
          hostname: _hostname(),
          identity,
          log,
          logRing,
          ...(opened ? { helper: opened.helper } : {}),
          connect: values.offline || !url ? undefined : () => connectWebSocket(url, 10_000, { caCerts }),
          onJournalStop: (e) => {
            log.fatal({ err: e.message }, "the journal stopped; exiting");
            Deno.exit(EXIT_INTERNAL);
          },
          ...(pull ? { pull } : {}),
        });
        const metrics = pull
          ? (await import("../runtimes/telemetry/prometheus.ts")).serveMetrics(pull, config.telemetry.metricsPort, log)
          : undefined;
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        Deno.addSignalListener("SIGTERM", onSignal);
        Deno.addSignalListener("SIGINT", onSignal);
        log.info({ node_id: identity.nodeId, boot_id: bootId, journal_id: journal.journalId, gateway: url }, "started");
        await agent.run(stop.signal);
        await close();
        await metrics?.stop();
        opened?.helper.close();
        log.info("stopped");
        return EXIT_OK;
      },
    },
  };
}

/** A session or join URL the node refuses (plain ws:/http: beyond loopback), as a usage error (the sim's `--nodes`). */
export const checkUrl: (url: string, use: TransportUse) => void = _checkUrl;

/** What {@link startAgent} needs beyond the role's wiring. */
export interface AgentStart {
  readonly config: ResolvedAgentConfig;
  readonly dataDir: string;
  readonly bootId: string;
  readonly hostname: string;
  readonly identity: NodeIdentity;
  readonly log: Logger;
  readonly logRing: LogRing;
  readonly helper?: HelperClient;
  /** Opens the session transport; absent: the agent runs offline. */
  readonly connect: (() => Promise<FrameTransport>) | undefined;
  /** The journal stopped (fail-stop): the daemon exits; an in-process fleet drops the node. */
  readonly onJournalStop: (e: JournalStopped) => void;
  /** The agent's and journal's clock (the real one unless given: a fleet skews some nodes' clocks). */
  readonly clock?: Clock;
  /** The journal's storage binding (`node:sqlite` unless given: a fleet slows some nodes' disks). */
  readonly driver?: SqlDriverFactory;
  /** Reconnect backoff (the session's defaults unless given). */
  readonly backoff?: BackoffOptions;
  /** Wraps the role's handlers (a fleet records each side effect, with the journal's incarnation, in its effect log). */
  readonly handlers?: (registry: HandlerRegistry, journal: Journal) => HandlerRegistry;
  /** The reader `/metrics` serves (the daemon's `telemetry.metrics_port`). */
  readonly pull?: PullReader;
}

/** A started agent: run it with `agent.run(signal)`, then `close()` (dispatcher, telemetry, instances, journal). */
export interface StartedAgent {
  readonly agent: NodeAgent;
  readonly journal: Journal;
  close(): Promise<void>;
}

/**
 * Opens the journal, builds the role's handlers and convergers and starts the node agent on them: the one start
 * path of `run` (the daemon) and of the sim's in-process fleet (`sim_fleet.ts`, one per node, each on its own data
 * dir: they share code, never state). What a fleet varies per node (clock, journal binding, handler wrapper,
 * backoff) comes in {@link AgentStart}.
 */
export async function startAgent(w: RoleWiring, o: AgentStart): Promise<StartedAgent> {
  // The session's first connection opens now, beside the journal's open, the runtime probes and the agent's start;
  // its Hello still waits for them (the agent's run reads the Challenge).
  const pre = o.connect ? preconnect(o.connect) : undefined;
  try {
    return await _startAgent(w, { ...o, connect: pre?.connect }, pre);
  } catch (e) {
    pre?.discard();
    throw e;
  }
}

async function _startAgent(w: RoleWiring, o: AgentStart, pre: Preconnected | undefined): Promise<StartedAgent> {
  const { config, dataDir, bootId, identity, log, logRing } = o;
  const clock = o.clock ?? realClock;
  // The role's runtime probes (through the helper) run while the journal opens; a failed open is the error reported.
  const [opened, probed] = await Promise.allSettled([
    Journal.open({
      dataDir,
      bootId,
      bounds: boundsFromConfig(config.journal),
      logger: log,
      nodeId: identity.nodeId,
      onStop: o.onJournalStop,
      clock,
      ...(o.driver ? { driver: o.driver } : {}),
    }),
    w.instanceConverger?.({ log, ...(o.helper ? { helper: o.helper } : {}) }),
  ]);
  if (opened.status === "rejected") throw opened.reason;
  if (probed.status === "rejected") throw probed.reason;
  const journal = opened.value;
  const conditions = new ConditionSet(clock);
  const secrets = new SessionSecrets({ log });
  let started: NodeAgent | undefined;
  const ctx: WiringContext = {
    config,
    dataDir,
    bootId,
    hostname: o.hostname,
    journal,
    identity,
    log,
    logRing,
    conditions,
    ...(o.helper ? { helper: o.helper } : {}),
    secrets,
    agent: {
      spec: () => started?.held?.spec,
      quorumEnforced: () => started !== undefined && enforcesQuorum(started.trustBundle),
    },
  };
  const devices = w.devices?.(ctx);
  const handlers = w.handlers(ctx);
  // The instances converger comes after the handlers; gpu.reset reads its passthrough lazily.
  const late: { instances?: InstancesConvergerView; devices?: DevicesConvergerView } = {};
  if (devices) {
    registerGpuKinds(handlers, devices, () => conditions, () => late.instances?.passthrough() ?? []);
  }
  checkHandledKinds(w, handlers);
  const inst = await probed.value?.(ctx, {
    secrets,
    holdsCommittedBytes: () => Promise.resolve(late.devices?.boundCommittedBytes() ?? 0),
    wake: () => started?.loop.expedite(),
  });
  late.instances = inst?.converger;
  const tunnels = w.tunnels?.(ctx, {
    serverNow: async () => Math.max(started?.serverNow() ?? clock.now(), (await journal.meta()).serverTimeMark),
    instances: () => started?.held?.spec.instances?.instances ?? [],
    ready: () => started?.startPass ?? Promise.resolve(),
  });
  const telemetry = await DeferredTelemetry.create({
    role: w.role,
    version: AGENT_VERSION,
    nodeId: identity.nodeId,
    log,
    ...(o.pull ? { pull: o.pull } : {}),
    sources: telemetrySources(dataDir, journal, () => started, late, inst),
  });
  const agent = started = await NodeAgent.start({
    role: w.role,
    identity,
    journal,
    config,
    handlers: o.handlers ? o.handlers(handlers, journal) : handlers,
    conditions,
    convergers: (events) => [
      ...(devices ? [late.devices = devicesConverger(ctx, devices, events, inst?.converger)] : []),
      ...(w.convergers?.(ctx, events, conditions, { secrets, wake: () => started?.loop.expedite() }) ?? []),
      ...(inst ? [inst.converger] : []),
      new TelemetryConverger(telemetry, secrets),
    ],
    capabilities: [...(w.capabilities ?? []), ...(inst?.capabilities ?? [])],
    ...(inst ? { runtimes: inst.converger.runtimeNames } : {}),
    instances: inst ? () => inst.converger.listing() : w.instances?.(ctx),
    ...(tunnels ? { tunnels } : {}),
    secrets,
    ...(w.onWelcome ? { onWelcome: w.onWelcome(ctx) } : {}),
    hostname: o.hostname,
    connect: o.connect,
    log,
    clock,
    ...(o.backoff ? { backoff: o.backoff } : {}),
  });
  agent.engine.onPass = (ms) => telemetry.recordPass(ms);
  return {
    agent,
    journal,
    async close() {
      pre?.discard();
      await agent.stop();
      await telemetry.stop();
      await inst?.stop?.();
      await journal.close();
    },
  };
}
