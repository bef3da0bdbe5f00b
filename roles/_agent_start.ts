/**
 * One agent started in process, as `run` starts it (`_agent_cli.ts`): the journal opened, the role's handlers and
 * convergers built, the node agent started on them (journal recovered, the held spec converging). What `run` reads
 * from its flags, the config file and the host comes in {@link AgentStart}; what a fleet varies per node (clock,
 * journal binding, handler wrapper, backoff) too. One process may start many (the sim's `run --nodes N`), each on its
 * own data dir: they share code, never state.
 *
 * Keep in step with `run` in `_agent_cli.ts`: a wiring step added there belongs here too (`sim_fleet_test` runs a
 * fleet node through the testbed; `version_test` checks the kinds).
 *
 * @module
 */
import type { HandlerRegistry } from "../core/commands/handlers.ts";
import type { ResolvedAgentConfig } from "../core/config/mod.ts";
import { ConditionSet } from "../core/converge/conditions.ts";
import type { InstancesConverger } from "../core/converge/instances/mod.ts";
import type { DevicesConverger } from "../core/converge/devices/mod.ts";
import { type Clock, realClock } from "../core/clock.ts";
import { boundsFromConfig, Journal, type JournalStopped, type SqlDriverFactory } from "../core/journal/mod.ts";
import type { Logger } from "../core/log/mod.ts";
import type { LogRing } from "../core/commands/kind_handlers/mod.ts";
import { enforcesQuorum } from "../core/pki/trust_bundle.ts";
import type { BackoffOptions } from "../core/session/backoff.ts";
import type { NodeIdentity } from "../core/session/identity.ts";
import { NodeAgent } from "../core/session/node_agent.ts";
import { SessionSecrets } from "../core/session/secrets.ts";
import type { FrameTransport } from "../core/session/transport.ts";
import { TelemetryConverger } from "../core/telemetry/converger.ts";
import { AGENT_VERSION } from "../core/version.ts";
import type { HelperClient } from "../runtimes/helper/client.ts";
import { OtlpTelemetry } from "../runtimes/telemetry/otlp.ts";
import { checkHandledKinds, type RoleWiring, type WiringContext } from "./_agent_cli.ts";
import { devicesConverger, registerGpuKinds } from "./_devices.ts";
import { telemetrySources } from "./_telemetry.ts";

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
}

/** A started agent: run it with `agent.run(signal)`, then `close()` (dispatcher, telemetry, instances, journal). */
export interface StartedAgent {
  readonly agent: NodeAgent;
  readonly journal: Journal;
  close(): Promise<void>;
}

/** Opens the journal, builds the role's handlers and convergers and starts the node agent on them. */
export async function startAgent(w: RoleWiring, o: AgentStart): Promise<StartedAgent> {
  const { config, dataDir, bootId, identity, log, logRing } = o;
  const clock = o.clock ?? realClock;
  const journal = await Journal.open({
    dataDir,
    bootId,
    bounds: boundsFromConfig(config.journal),
    logger: log,
    nodeId: identity.nodeId,
    onStop: o.onJournalStop,
    clock,
    ...(o.driver ? { driver: o.driver } : {}),
  });
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
  const late: { instances?: InstancesConverger; devices?: DevicesConverger } = {};
  if (devices) {
    registerGpuKinds(handlers, devices, () => conditions, () => late.instances?.passthrough() ?? []);
  }
  checkHandledKinds(w, handlers);
  const inst = await w.instanceConverger?.(ctx, {
    secrets,
    holdsCommittedBytes: () => Promise.resolve(late.devices?.boundCommittedBytes() ?? 0),
    wake: () => started?.loop.expedite(),
  });
  late.instances = inst?.converger;
  const tunnels = w.tunnels?.(ctx, {
    serverNow: async () => Math.max(started?.serverNow() ?? clock.now(), (await journal.meta()).serverTimeMark),
    instances: () => started?.held?.spec.instances?.instances ?? [],
  });
  const telemetry = new OtlpTelemetry({
    role: w.role,
    version: AGENT_VERSION,
    nodeId: identity.nodeId,
    log,
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
      await agent.stop();
      await telemetry.stop();
      inst?.stop?.();
      await journal.close();
    },
  };
}
