/**
 * Many simulated nodes in one process (`bcd-sim run --nodes N`): each node has its own data dir
 * (`<data dir>/nodes/<NNNN>/`), identity (key and certificate from its own join), journal, boot id, session and fake
 * hardware; they share the code and the process, never state (each start builds its own wiring: `simWiring()`).
 *
 * {@link FleetNode.kill} is the in-process stand-in for a SIGKILL of one node: its journal is abandoned where it stands
 * ({@link Journal.abandon}: an uncommitted transaction is rolled back, nothing more is written, the lock is released),
 * its session and timers stop, and every object of that start is dropped; {@link FleetNode.start} then opens the same
 * journal as a new process would (a fresh incarnation; the same boot unless the node was rebooted). How faithful that
 * is, written down: what a killed process loses (memory, uncommitted writes, the connection) is lost here too, and
 * what it keeps (committed journal writes, files) is kept; what differs is that JavaScript cannot stop a function in
 * the middle: a handler already running finishes its own step (its next journal write then fails, as the dead
 * process's would never happen), so a side effect that had started still completes. A fleet harness gates its effect
 * log on {@link FleetNode.alive} so that such a leftover is not counted as a run of the new process.
 *
 * @module
 */
import { join as joinPath } from "../core/util/path.ts";
import type { ResolvedAgentConfig } from "../core/config/mod.ts";
import type { Clock } from "../core/clock.ts";
import type { HandlerRegistry } from "../core/commands/handlers.ts";
import { LogRing } from "../core/commands/kind_handlers/log_ring.ts";
import { type Journal, type JournalStopped, readBootId, type SqlDriverFactory } from "../core/journal/mod.ts";
import { createLogger, type Logger, type LogLevel, stderrDestination } from "../core/log/mod.ts";
import type { BackoffOptions } from "../core/session/backoff.ts";
import { join, loadIdentity, type NodeIdentity } from "../core/session/identity.ts";
import { AGENT_VERSION } from "../core/version.ts";
import type { NodeAgent } from "../core/session/node_agent.ts";
import type { FrameTransport } from "../core/session/transport.ts";
import { connectWebSocket } from "../core/session/ws_client.ts";
import { startAgent, type StartedAgent } from "./_agent_cli.ts";
import { simWiring } from "./sim_wiring.ts";
import { simBootIdFile } from "../runtimes/fakehw/sim_host.ts";
import type { Rebooter } from "../core/commands/kind_handlers/mod.ts";

/** The directory of node `index` (1-based) under a fleet's data dir. */
export function fleetNodeDir(dataDir: string, index: number): string {
  return joinPath(dataDir, "nodes", String(index).padStart(4, "0"));
}

/** A fleet node's log ring bound: its own recent lines for `logs.collect`, kept small since N of them share memory. */
export const FLEET_LOG_RING_BYTES = 64 * 1024;

/** What one start of a fleet node may differ in (a harness's fault injection); all optional. */
export interface FleetNodeStart {
  /** The session's transport (default: the node's own WebSocket client to the fleet's gateway URL). */
  readonly connect?: () => Promise<FrameTransport>;
  /** The node's clock (a skewed one); the real clock otherwise. */
  readonly clock?: Clock;
  /** The journal's storage binding (a slow disk); `node:sqlite` otherwise. */
  readonly driver?: SqlDriverFactory;
  /** Wraps the role's handlers (an effect log; the journal names the start's incarnation). */
  readonly handlers?: (registry: HandlerRegistry, journal: Journal) => HandlerRegistry;
  readonly backoff?: BackoffOptions;
  /** How `node.reboot` reboots this node (default: the sim's, which ends the whole process). */
  readonly rebooter?: Rebooter;
}

/** One running start of a node. */
interface _Run {
  readonly started: StartedAgent;
  readonly abort: AbortController;
  readonly done: Promise<void>;
  readonly incarnation: string;
}

/** What every node of a fleet shares. */
export interface FleetShared {
  readonly config: ResolvedAgentConfig;
  /** The session URL; absent: the nodes run offline. */
  readonly gatewayUrl: string | undefined;
  readonly logLevel: LogLevel;
  /** Where every node's log lines go (one shared stderr destination). */
  readonly destination: { write(line: string): void };
}

/** One simulated node of a fleet. */
export class FleetNode {
  readonly index: number;
  readonly dataDir: string;
  readonly identity: NodeIdentity;
  readonly #shared: FleetShared;
  #run: _Run | undefined;
  #starts = 0;
  /** Journal stops that no kill caused (a real failure; a harness reports them). */
  readonly unexpectedStops: string[] = [];

  private constructor(index: number, dataDir: string, identity: NodeIdentity, shared: FleetShared) {
    this.index = index;
    this.dataDir = dataDir;
    this.identity = identity;
    this.#shared = shared;
  }

  /** The node of `dataDir` (joined before: `bcd-sim join --nodes N`). */
  static async open(index: number, dataDir: string, shared: FleetShared): Promise<FleetNode> {
    const identity = await loadIdentity(dataDir);
    if (!identity) throw new Error(`${dataDir} holds no identity; run "join --nodes" first`);
    return new FleetNode(index, dataDir, identity, shared);
  }

  get nodeId(): string {
    return this.identity.nodeId;
  }

  /** The agent of the current start, while it runs. */
  get agent(): NodeAgent | undefined {
    return this.#run?.started.agent;
  }

  /** The journal incarnation of the current start (a process start's id), while it runs. */
  get incarnation(): string | undefined {
    return this.#run?.incarnation;
  }

  /** Whether `incarnation` is the start running now (a killed start's leftovers are not). */
  alive(incarnation: string): boolean {
    return this.#run?.incarnation === incarnation;
  }

  /** Starts so far. */
  get starts(): number {
    return this.#starts;
  }

  /** The current boot id (`<data dir>/boot_id`). */
  async bootId(): Promise<string> {
    return await readBootId(await simBootIdFile(this.dataDir));
  }

  /** Starts the node (a new process's worth of state over the same data dir). */
  async start(o: FleetNodeStart = {}): Promise<void> {
    if (this.#run) throw new Error(`fleet node ${this.index} is already running`);
    const sh = this.#shared;
    const logRing = new LogRing(FLEET_LOG_RING_BYTES);
    const log: Logger = createLogger({
      level: sh.logLevel,
      base: { role: "sim", node: this.index },
      destination: logRing.tee(sh.destination),
    });
    const wiring = simWiring(o.rebooter ? { rebooter: o.rebooter } : {});
    const url = sh.gatewayUrl;
    const bootId = await readBootId(await simBootIdFile(this.dataDir));
    const me: { incarnation?: string } = {};
    const started = await startAgent(wiring, {
      config: { ...sh.config, dataDir: this.dataDir },
      dataDir: this.dataDir,
      bootId,
      hostname: `sim-${String(this.index).padStart(4, "0")}`,
      identity: this.identity,
      log,
      logRing,
      connect: o.connect ?? (url ? () => connectWebSocket(url, 10_000) : undefined),
      onJournalStop: (e: JournalStopped) => {
        // A kill abandons the journal: the writes it cuts off stop it, as designed. Anything else is a failure.
        if (me.incarnation !== undefined && this.alive(me.incarnation)) {
          this.unexpectedStops.push(e.message);
          log.error({ err: e.message }, "the journal stopped");
        }
      },
      ...(o.clock ? { clock: o.clock } : {}),
      ...(o.driver ? { driver: o.driver } : {}),
      ...(o.backoff ? { backoff: o.backoff } : {}),
      ...(o.handlers ? { handlers: o.handlers } : {}),
    });
    me.incarnation = started.journal.incarnation;
    const abort = new AbortController();
    const done = started.agent.run(abort.signal).catch((e) => {
      log.error({ err: String(e) }, "the agent's run ended with an error");
    });
    this.#run = { started, abort, done, incarnation: me.incarnation };
    this.#starts++;
  }

  /** Stops the node cleanly (the session closes, running commands finish, the journal closes). */
  async stop(): Promise<void> {
    const r = this.#run;
    if (!r) return;
    r.abort.abort();
    await r.done;
    await r.started.close();
    this.#run = undefined;
  }

  /**
   * The in-process SIGKILL: the journal is abandoned where it stands, the session and timers stop, and this start's
   * state is dropped (see the module doc for how faithful that is). Cut the node's connection before (a harness's
   * proxy) so that the gateway sees no close frame, as after a real kill.
   */
  async kill(): Promise<void> {
    const r = this.#run;
    if (!r) return;
    this.#run = undefined;
    r.started.journal.abandon();
    r.abort.abort();
    await r.done;
  }
}

/** Options of {@link SimFleet.open}. */
export interface SimFleetOptions extends FleetShared {
  readonly dataDir: string;
  readonly nodes: number;
}

/** N joined sim nodes under one data dir, in this process. */
export class SimFleet {
  readonly nodes: readonly FleetNode[];

  private constructor(nodes: FleetNode[]) {
    this.nodes = nodes;
  }

  /** Opens nodes 1..N of `o.dataDir` (each joined before); starts none. */
  static async open(o: SimFleetOptions): Promise<SimFleet> {
    const nodes: FleetNode[] = [];
    for (let i = 1; i <= o.nodes; i++) nodes.push(await FleetNode.open(i, fleetNodeDir(o.dataDir, i), o));
    return new SimFleet(nodes);
  }

  /** Stops every node cleanly. */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

/** Joins nodes 1..tokens.length under `dataDir` (node i with `tokens[i - 1]`), 16 at a time; their node ids, in order. */
export async function joinFleet(dataDir: string, tokens: readonly string[], joinUrl: string): Promise<string[]> {
  const ids: string[] = new Array(tokens.length);
  await eachLimited([...tokens.keys()], 16, async (i) => {
    const dir = fleetNodeDir(dataDir, i + 1);
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const id = await join({
      dataDir: dir,
      joinUrl,
      token: tokens[i]!,
      role: "node",
      hostname: `sim-${String(i + 1).padStart(4, "0")}`,
      agentVersion: AGENT_VERSION,
    });
    ids[i] = id.nodeId;
  });
  return ids;
}

/** Runs `fn` over `items` with at most `limit` at once. */
export async function eachLimited<T>(items: readonly T[], limit: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The shared stderr destination of a fleet's loggers (synchronous, as the daemon's). */
export function fleetDestination(): { write(line: string): void } {
  return stderrDestination();
}
