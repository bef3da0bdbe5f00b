/**
 * `worker::work`: the worker of a layered root (seed 002 §"PID 1 and the worker"). Before the root configuration
 * it accepts only the configuration or a Stop; then it runs the stages (configuration → layout → bootstrap →
 * assembly) and answers Ready or RootFailed with the stage that failed, ending with the stage's status; once
 * ready it serves Ping, Echo, Probe (refused while executions run), mapping tables, Start, config installs and
 * executions; on Stop it drops its executions, tears the root down (reporting a failed teardown first) and
 * confirms with Stopped. It exits with 0 after a stop whose teardown succeeded, 11–15 when a stage failed, and 1
 * when its session failed or the stream ended.
 *
 * Config installs (kinds 32–34) are the one exception to "only the configuration or a Stop" before the root:
 * seed 004 refuses an install before provisioning with failed-precondition, an answer rather than the end of
 * the session, so the worker answers them in every phase and installs only once the root is ready.
 *
 * @module
 */
import { AttachGate } from "./attach_gate.ts";
import type { Logger } from "../core/log/mod.ts";
import {
  BodyError,
  decodeMaps,
  decodeProbe,
  Decoder,
  decodeRootConfig,
  encodeFacts,
  encodeFrame,
  encodeMapFailure,
  encodeProblem,
  encodeReady,
  encodeRootFailure,
  type Frame,
  FramingError,
  isExecKind,
  Kind,
  MAX_DATA_BODY,
  MAX_TEXT_BODY,
  type RootConfig,
  type RootStage,
  stageSpec,
} from "../core/framing/mod.ts";
import { AGENT_VERSION } from "../core/version.ts";
import { type Clock, realClock } from "../core/clock.ts";
import type { ConfigInstaller, InstallSession } from "./config_install.ts";
import { type EngineHost, ExecEngine, SessionError } from "./exec_engine.ts";
import { checkExecIdentity, type ExecIdentity } from "./process_group.ts";
import { EXECUTING, INPUT_QUEUE_LIMIT } from "./exec_limits.ts";
import { Outbox } from "./outbox.ts";
import type { RootOperations } from "./root_ops.ts";
import { MappingFailed, ProbeProblem, StageFailed } from "./root_errors.ts";
import { checkLayout } from "./root_layout.ts";
import { RESET, type Transport } from "./transport.ts";

/** The guest agent's build, which Ready carries: `GUEST_BUILD`. */
export const GUEST_BUILD = AGENT_VERSION;

/** Options of {@link Worker}. */
export interface WorkerOptions {
  readonly ops: RootOperations;
  readonly log: Logger;
  readonly clock?: Pick<Clock, "monotonic" | "setTimer">;
  readonly build?: string;
  readonly installer?: ConfigInstaller;
  readonly spawn?: EngineHost["spawn"];
  /** Who executions run as (seed 004 §(c): non-root, no capabilities); unset: as the worker itself. */
  readonly execIdentity?: ExecIdentity;
  /**
   * The VM's secret (the launch capability, which is also its channel key): each epoch attaches by proving it first
   * (`attach_gate.ts`); unset or null takes any host.
   */
  readonly channelKey?: Uint8Array | null;
}

/** The worker's phases. */
export type WorkerPhase = "unconfigured" | "assembling" | "ready" | "stopping" | "ended";

class End {
  constructor(readonly status: number, readonly problem: string | null) {}
}

const clip = (s: string) => s.length > MAX_TEXT_BODY - 64 ? s.slice(0, MAX_TEXT_BODY - 64) : s;

/** The worker of one layered root over one transport. */
export class Worker {
  phase: WorkerPhase = "unconfigured";
  readonly engine: ExecEngine;
  readonly outbox: Outbox;
  readonly #dec = new Decoder({ from: "host" });
  readonly #log: Logger;
  readonly #ops: RootOperations;
  readonly #install: InstallSession | null;
  #config: RootConfig | null = null;
  #mapped = 0;
  #started = false;
  #inputWaiter: (() => void) | null = null;
  readonly #gate: AttachGate;
  /** The problem that ended the session, for the diagnostic on standard error. */
  problem: string | null = null;

  constructor(readonly t: Transport, readonly opts: WorkerOptions) {
    this.#log = opts.log;
    this.#ops = opts.ops;
    this.#gate = new AttachGate(opts.channelKey ?? null, opts.log);
    this.outbox = new Outbox(t);
    this.outbox.onDrain = () => {
      this.engine.wake();
      if (this.outbox.bytes <= INPUT_QUEUE_LIMIT && this.#inputWaiter) {
        const w = this.#inputWaiter;
        this.#inputWaiter = null;
        w();
      }
    };
    this.engine = new ExecEngine({
      clock: opts.clock ?? realClock,
      log: opts.log,
      emit: (f) => this.outbox.push(f),
      queued: () => this.outbox.bytes,
      spawn: opts.spawn,
      identity: opts.execIdentity === undefined ? undefined : checkExecIdentity(opts.execIdentity),
    });
    this.#install = opts.installer?.session(() => this.phase === "ready") ?? null;
  }

  #send(kind: number, body?: Uint8Array): void {
    this.outbox.push(encodeFrame(kind, body));
  }

  /** Serves until the worker ends; returns its exit status. */
  async run(): Promise<number> {
    let end: End;
    try {
      end = await this.#serve();
    } catch (e) {
      end = new End(1, e instanceof Error ? e.message : String(e));
    }
    this.phase = "ended";
    this.problem = end.problem;
    if (end.problem !== null) this.#log.error({ status: end.status }, end.problem);
    await this.engine.drop();
    this.engine.close();
    await this.outbox.flush();
    await this.#ops.release().catch((e) => this.#log.warn({ err: String(e) }, "release failed"));
    return end.status;
  }

  async #serve(): Promise<End> {
    for (;;) {
      if (this.outbox.bytes > INPUT_QUEUE_LIMIT) {
        await new Promise<void>((r) => this.#inputWaiter = r);
        continue;
      }
      if (this.outbox.failed) return new End(1, `the stream failed: ${String(this.outbox.failed)}`);
      let chunk;
      try {
        chunk = await this.t.read();
      } catch (e) {
        return new End(1, `the stream failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (chunk === RESET) {
        this.#reset();
        continue;
      }
      if (chunk === null) {
        if (this.#dec.partial) return new End(1, "the stream ended inside a message");
        return new End(1, "the stream ended");
      }
      try {
        this.#dec.feed(chunk);
        for (let f = this.#dec.next(); f !== null; f = this.#dec.next()) {
          const gate = this.#gate.take(f);
          if (gate === "dropped") continue;
          if (gate !== null) {
            this.outbox.push(gate);
            continue;
          }
          const end = await this.#handle(f);
          if (end) return end;
        }
      } catch (e) {
        if (e instanceof FramingError || e instanceof SessionError) return new End(1, e.message);
        throw e;
      }
    }
  }

  #reset(): void {
    const dropped = this.#dec.reset();
    this.#gate.reset();
    this.outbox.clear();
    this.engine.abandonAll();
    this.#install?.reset();
    this.#log.info({ dropped }, "session reset: executions abandoned, a new epoch starts with a new message");
  }

  async #handle(f: Frame): Promise<End | null> {
    if (f.kind === Kind.AgentConfigVersion || f.kind === Kind.AgentConfigChunk || f.kind === Kind.AgentConfigEnd) {
      const reply = this.#install?.frame(f.kind, f.body) ?? null;
      reply?.then((r) => this.outbox.push(this.#install!.encode(r)));
      return null;
    }
    if (this.phase === "unconfigured") {
      if (f.kind === Kind.RootConfig) return await this.#configure(f.body);
      if (f.kind === Kind.Stop) {
        this.#send(Kind.Stopped);
        return new End(0, null);
      }
      return new End(1, `before the root configuration the worker accepts only it or Stop, not kind ${f.kind}`);
    }
    switch (f.kind) {
      case Kind.Ping:
        this.#send(Kind.Pong);
        return null;
      case Kind.Echo:
        this.#send(Kind.Echo, f.body);
        return null;
      case Kind.Probe:
        await this.#probe(f.body);
        return null;
      case Kind.Maps:
        await this.#maps(f.body);
        return null;
      case Kind.Start:
        if (this.#started) return new End(1, "a second Start");
        if (this.#mapped !== (this.#config!.mappingCount ?? 0)) {
          return new End(1, `Start before the mapping table was applied (${this.#mapped} mappings)`);
        }
        await this.#ops.startWorkloads();
        this.#started = true;
        this.#send(Kind.Started);
        return null;
      case Kind.Stop:
        return await this.#stop();
      case Kind.RootConfig:
        return new End(1, "a second root configuration");
    }
    if (isExecKind(f.kind)) {
      this.engine.handle(f.kind, f.body);
      return null;
    }
    return new End(1, `kind ${f.kind} is not served by the worker`);
  }

  #failStage(stage: RootStage, problem: string): End {
    this.#send(Kind.RootFailed, encodeRootFailure({ stage, problem: clip(problem) }));
    return new End(stageSpec(stage).status, `the ${stage} stage failed: ${problem}`);
  }

  async #configure(body: Uint8Array): Promise<End | null> {
    let config: RootConfig;
    try {
      config = decodeRootConfig(body);
    } catch (e) {
      return this.#failStage("configuration", e instanceof Error ? e.message : String(e));
    }
    this.phase = "assembling";
    try {
      const layout = await this.#ops.readLayout();
      checkLayout(config, layout);
      await this.#ops.bootstrap(config);
      await this.#ops.assemble(config, layout);
    } catch (e) {
      if (e instanceof StageFailed) return this.#failStage(e.stage, e.message);
      throw e;
    }
    this.#config = config;
    this.phase = "ready";
    this.#send(Kind.Ready, encodeReady(this.opts.build ?? GUEST_BUILD));
    this.#log.info({ build: this.opts.build ?? GUEST_BUILD }, "root ready");
    return null;
  }

  /**
   * Runs a probe while the worker runs no execution: none attached to the host, and none that it abandoned or
   * whose program's status it has not collected (seed 002: "while it runs no execution"). Whatever the probe
   * throws is its problem, answered with ProbeFailed: a probe never ends the session. Facts beyond a Report's
   * 256 KiB are refused the same way.
   */
  async #probe(body: Uint8Array): Promise<void> {
    if (this.engine.count > 0) {
      this.#send(Kind.ProbeFailed, encodeProblem(EXECUTING));
      return;
    }
    let report: Uint8Array;
    try {
      report = encodeFacts(await this.#ops.probe(decodeProbe(body)));
    } catch (e) {
      const problem = e instanceof ProbeProblem || e instanceof BodyError
        ? e.message
        : `the probe failed: ${e instanceof Error ? e.message : String(e)}`;
      this.#send(Kind.ProbeFailed, encodeProblem(clip(problem)));
      return;
    }
    if (report.length > MAX_DATA_BODY) {
      this.#send(Kind.ProbeFailed, encodeProblem(`the facts hold ${report.length} bytes, beyond ${MAX_DATA_BODY}`));
      return;
    }
    this.#send(Kind.Report, report);
  }

  async #maps(body: Uint8Array): Promise<void> {
    const refuse = (problem: string) =>
      this.#send(Kind.MapFailed, encodeMapFailure({ applied: this.#mapped, problem: clip(problem) }));
    let part;
    try {
      part = decodeMaps(body);
    } catch (e) {
      return refuse(e instanceof Error ? e.message : String(e));
    }
    const count = this.#config!.mappingCount ?? 0;
    if (this.#started) return refuse("the workloads started already");
    if (part.first !== this.#mapped) return refuse(`the part starts at ${part.first}, not ${this.#mapped}`);
    if (part.first + part.mappings.length > count) return refuse(`the table announces ${count} mappings`);
    for (const m of part.mappings) {
      try {
        await this.#ops.applyMapping(m);
      } catch (e) {
        if (e instanceof MappingFailed) return refuse(e.message);
        throw e;
      }
      this.#mapped++;
    }
    this.#send(Kind.Mapped);
  }

  async #stop(): Promise<End> {
    this.phase = "stopping";
    await this.engine.drop();
    try {
      await this.#ops.teardown();
    } catch (e) {
      if (!(e instanceof StageFailed)) throw e;
      this.#send(Kind.RootFailed, encodeRootFailure({ stage: "teardown", problem: clip(e.message) }));
      this.#send(Kind.Stopped);
      return new End(stageSpec("teardown").status, `the teardown failed: ${e.message}`);
    }
    this.#send(Kind.Stopped);
    return new End(0, null);
  }
}
