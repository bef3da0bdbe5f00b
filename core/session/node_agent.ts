/**
 * The node agent: the session, the journal, the command dispatcher and the convergence engine wired together.
 *
 * - At start the journal is recovered (settled `rebooted`/`interrupted` results go out with the next `Hello`) and the
 *   spec it holds is converged at once, with or without a gateway: desired state is enforced while offline. That
 *   first pass runs beside the session's start, not before it: the first `Hello` does not wait for it.
 * - `Hello` carries the node id, role, journal id, boot id, applied generation, spec hash, capabilities, version,
 *   kinds and the oldest unacked results within {@link MAX_HELLO_RESULTS} and {@link MAX_HELLO_RESULT_BYTES} (the
 *   rest follow `Welcome`, in order); `Welcome` moves the server time mark (refused more than 5 minutes back or
 *   more than 24 hours ahead), sets the server-time offset, takes a trust bundle under the rotation rules
 *   (`trust_rotation.ts`) and acks events; then unacked results and events are replayed.
 * - Server time ({@link NodeAgent.serverNow}) never goes back once a `Welcome` gave it: a heartbeat can only move it
 *   forward, a `Welcome` within the 5 minutes the seed allows cannot move it below what it already returned, and a
 *   heartbeat too far ahead ends the session with `time-mark`; before the first `Welcome` it is the host clock's
 *   estimate (never below the mark), which the `Welcome` corrects.
 * - At start the spec the journal holds is enforced only when its signature verifies against the held trust bundle
 *   (when that bundle holds roots); else the node asks for the full spec once connected.
 * - Desired state goes through {@link takeDesiredState}; an applied spec is journaled before it is converged.
 * - Status is coalesced latest-wins: only the newest report waits for the session.
 *
 * @module
 */
import { bcd, decodeMessage, encodeMessage, type GatewayFrame, type Props, WireDecodeError } from "../../proto/mod.ts";
import { kindRoleOf, kindsForRole, type Role } from "../commands/kinds.ts";
import { Dispatcher } from "../commands/dispatcher.ts";
import type { HandlerRegistry } from "../commands/handlers.ts";
import type { CommandUpdate } from "../commands/results.ts";
import {
  CommandDecodeError,
  incomingFromWire,
  MAX_COMMAND_ID_BYTES,
  timestampMs,
  updateToWire,
} from "../commands/wire.ts";
import { ConditionSet } from "../converge/conditions.ts";
import { type Clock, realClock, repeat } from "../clock.ts";
import { ConvergenceEngine, type SectionConverger, type StatusSnapshot } from "../converge/engine.ts";
import { ConvergeLoop } from "../converge/loop.ts";
import type { SectionName } from "../converge/section.ts";
import type { InstanceListing } from "../converge/instances/mod.ts";
import type { ResolvedAgentConfig } from "../config/mod.ts";
import {
  type AllocationAnnouncement,
  type EventClass,
  type Journal,
  ServerTimeAhead,
  ServerTimeRegressed,
} from "../journal/mod.ts";
import { forLog } from "../log/bounded_text.ts";
import type { Logger } from "../log/mod.ts";
import { QuorumLedger } from "../pki/quorum_ledger.ts";
import type { TrustBundle } from "../pki/mod.ts";
import { AGENT_VERSION, PROTOCOLS } from "../version.ts";
import {
  type NodeFrameInit,
  SessionClient,
  type SessionDelegate,
  type SessionOut,
  SessionProtocolError,
} from "./client.ts";
import { type HeldDesiredState, heldFromJournal, takeDesiredState } from "./desired_state.ts";
import { extendProvenance, type StoredSpecRecord, verifyHeldSpec } from "./spec_provenance.ts";
import { takeTrustBundle } from "./trust_rotation.ts";
import { type NodeIdentity, saveTrustBundle, trustBundleFromWire, unbatchedFromWire } from "./identity.ts";
import { signSessionProof } from "./proofs.ts";
import type { FrameTransport } from "./transport.ts";
import { routeTunnelFrame, type TunnelPort } from "./tunnel_frames.ts";
import type { SessionSecrets } from "./secrets.ts";
import { CommandIntake } from "./command_intake.ts";

/** An event as convergers emit it; the journal assigns `seq`. */
export type EventInit = Omit<Props<typeof bcd.v1.Event>, "seq" | "event_class" | "age_ms">;

/** Where convergers and handlers put events. */
export interface EventSink {
  /** Journals `event` (with `announce`, recording what an allocation event says in the same transaction). */
  emit(cls: EventClass, event: EventInit, announce?: AllocationAnnouncement): Promise<void>;
}

/** Options of {@link NodeAgent}. */
export interface NodeAgentOptions {
  readonly role: Role;
  readonly identity: NodeIdentity;
  readonly journal: Journal;
  readonly config: ResolvedAgentConfig;
  readonly handlers: HandlerRegistry;
  /** Built once the agent exists, so convergers can emit events through it. */
  readonly convergers?: (events: EventSink, conditions: ConditionSet) => readonly SectionConverger[];
  readonly capabilities?: readonly string[];
  readonly runtimes?: readonly string[];
  readonly hostname?: string;
  /** Opens the session transport; absent: the agent runs offline. */
  readonly connect?: () => Promise<FrameTransport>;
  readonly log: Logger;
  /** The condition set, when the wiring made it first (handlers clear XID conditions in it). */
  readonly conditions?: ConditionSet;
  /**
   * The clock (`core/clock.ts`) of the session and its timers, the drift and sweep timers, the conditions' ages and
   * the server time.
   */
  readonly clock?: Clock;
  /** Reconnect backoff (tests shorten it). */
  readonly backoff?: { baseMs?: number; maxMs?: number };
  /** Drift pass interval (tests shorten it). */
  readonly driftMs?: number;
  /** Every VM the host runtimes know, and whether that is all of them, for `StatusReport.instances(_complete)`. */
  readonly instances?: () => InstanceListing;
  /** Exec tunnels (`OpenTunnel`, `TunnelData`, `TunnelClose`); absent: every `OpenTunnel` is refused. */
  readonly tunnels?: TunnelPort;
  /** The SecretRequest broker the convergers fetch secrets through; it sends on the live session. */
  readonly secrets?: SessionSecrets;
  /**
   * Runs after each `Welcome` is taken (the self-update's confirm: this process reached `Welcome`); a failure is logged
   * and does not end the session.
   */
  readonly onWelcome?: () => Promise<void>;
}

/** How often the journal is swept while the daemon runs. */
export const SWEEP_INTERVAL_MS = 60 * 60_000;

/** The node agent. */
export class NodeAgent implements SessionDelegate, EventSink {
  readonly conditions: ConditionSet;
  readonly engine: ConvergenceEngine;
  readonly loop: ConvergeLoop;
  readonly dispatcher: Dispatcher;
  readonly journal: Journal;
  readonly #o: NodeAgentOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #now: () => number;
  #trust: TrustBundle;
  #bundleUnbatched = 0;
  #held: HeldDesiredState | undefined;
  /** What the journal holds for {@link #held}: its bytes and signature (or provenance chain). */
  #heldRecord: StoredSpecRecord | undefined;
  #serverOffset = 0;
  /** The highest server time returned so far: {@link serverNow} never goes below it. */
  #serverFloor = 0;
  /**
   * Whether a `Welcome` of this process gave the offset. Before one, {@link serverNow} is an estimate from the host
   * clock (and the mark) and raises no floor: a host clock running ahead would otherwise hold server time ahead after
   * the `Welcome` corrects it, refusing fresh commands `EXPIRED` (found by test:fleet with skewed clocks).
   */
  #welcomed = false;
  #trustBytes: Uint8Array;
  #upgradeOnly = false;
  #out: SessionOut | undefined;
  #latestStatus: StatusSnapshot | undefined;
  /** The held spec's pass started at start (see {@link NodeAgent.start}); it never rejects. */
  #firstPass: Promise<void> | undefined;
  #sentEventSeq = 0;
  #flushing = false;
  #client: SessionClient | undefined;
  /** Command frames in acceptance while the session reads on (`command_intake.ts`). */
  readonly #intake: CommandIntake<Props<typeof bcd.v1.Command>>;

  private constructor(o: NodeAgentOptions, ledger: QuorumLedger) {
    this.#o = o;
    this.#log = o.log;
    this.#intake = new CommandIntake((c) => this.#command(c), o.log);
    this.#clock = o.clock ?? realClock;
    this.#now = () => this.#clock.now();
    this.journal = o.journal;
    this.#trustBytes = o.identity.trustBundle;
    this.#trust = trustBundleFromWire(o.identity.trustBundle);
    this.#bundleUnbatched = unbatchedFromWire(o.identity.trustBundle);
    this.conditions = o.conditions ?? new ConditionSet(this.#clock);
    const convergers = o.convergers?.(this, this.conditions) ?? [];
    this.engine = new ConvergenceEngine({ convergers, log: o.log, conditions: this.conditions });
    this.loop = new ConvergeLoop(this.engine, {
      clock: this.#clock,
      driftMs: o.driftMs,
      onStatus: (s) => this.#status(s),
    });
    const role = kindRoleOf(o.role) ?? "node";
    this.dispatcher = new Dispatcher({
      journal: o.journal,
      clock: this.#clock,
      acceptance: {
        nodeId: o.identity.nodeId,
        role,
        handlers: o.handlers,
        upgradeOnly: () => this.#upgradeOnly,
        appliedGeneration: () => this.#held?.generation ?? 0,
        serverNow: () => this.serverNow(),
        trustBundle: () => this.#trust,
        ledger,
        // The smaller of the config's and the trust bundle's allowance: neither side can raise it alone.
        unbatchedPerHour: () => Math.min(o.config.commands.unbatchedDestructivePerHour, this.#bundleUnbatched),
      },
      sink: { send: (u) => this.#update(u) },
      specs: { requestSpec: (have, reason, detail) => this.#requestSpec(have, reason, detail) },
      bootId: o.journal.bootId,
      nodeKey: o.identity.key.privateKey,
      logger: o.log,
    });
  }

  /**
   * Builds the agent, recovers the journal and begins converging the spec the journal holds (offline enforcement;
   * {@link NodeAgent.startPass} is that pass's end).
   */
  static async start(o: NodeAgentOptions): Promise<NodeAgent> {
    const ledger = await QuorumLedger.open(o.journal.dataDir);
    const a = new NodeAgent(o, ledger);
    const rec = await o.journal.recover();
    for (const e of rec.settled) {
      a.#log.info({ command_id: e.id, state: e.result.state, code: e.result.code }, "settled at start");
    }
    const swept = await o.journal.sweep();
    a.#log.info({ swept }, "journal swept at start");
    const meta = await o.journal.meta();
    if (meta.nodeId === null) await o.journal.setNodeId(o.identity.nodeId);
    a.#serverOffset = meta.serverTimeMark > 0 ? Math.max(0, meta.serverTimeMark - a.#now()) : 0;
    a.#serverFloor = meta.serverTimeMark;
    const stored = await o.journal.getSpec();
    if (stored) {
      a.#held = heldFromJournal(stored.bytes, o.identity.nodeId);
      const refused = a.#held ? await verifyHeldSpec(stored, a.#trust, a.serverNow(), o.identity.nodeId) : undefined;
      if (refused !== undefined) {
        a.#log.error(
          { generation: a.#held?.generation, why: refused },
          "the journal's spec does not verify against the trust bundle; not enforced, asking for the full spec",
        );
        a.#held = undefined;
      } else if (a.#held) {
        a.#heldRecord = stored;
        a.#log.info({ generation: a.#held.generation }, "converging the spec the journal holds");
        // The pass runs beside the session's start: Hello carries the held generation and hash, not the pass's
        // outcome, so a pass that waits on the host (a runtime's listing, a domain's start) no longer holds the first
        // Hello back (issue 24). Its status goes out when it ends, or with the session's first status if that is
        // later; a Welcome's spec waits for it (the engine runs one pass at a time).
        a.#firstPass = a.loop.onSpec(a.#heldSpec(a.#held)).then(
          () => undefined,
          (e) => a.#log.error({ err: String(e) }, "pass failed"),
        );
      } else a.#log.warn("the journal's spec is unusable; asking for the full spec once connected");
    }
    return a;
  }

  /**
   * Server time: the host clock plus the offset `Welcome` and heartbeats set, never below a value it returned since a
   * `Welcome` of this process or the server time mark it started from, so `not_after` and certificate windows never
   * see it go back. Before the first `Welcome` it is the host clock's estimate (never below the mark), which binds
   * nothing later: the `Welcome` corrects a host clock that runs ahead.
   */
  serverNow(): number {
    const t = Math.max(this.#now() + this.#serverOffset, this.#serverFloor);
    if (this.#welcomed) this.#serverFloor = t;
    return t;
  }

  /**
   * Resolves when the pass over the journal's spec that {@link NodeAgent.start} began has ended (at once when the
   * journal held none): start returns without waiting for it, so the first `Hello` does not either.
   */
  get startPass(): Promise<void> {
    return this.#firstPass ?? Promise.resolve();
  }

  /** The spec held now. */
  get held(): HeldDesiredState | undefined {
    return this.#held;
  }

  /** The trust bundle in force now (command-signing roots, approver keys). */
  get trustBundle(): TrustBundle {
    return this.#trust;
  }

  get session(): SessionClient | undefined {
    return this.#client;
  }

  /** Runs the session (when a gateway is configured) and the drift timer until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    // Both run from before the first Hello on: rare timers, so that a start does not load Deno's Node timers (clock.ts).
    const rare = { setTimer: (ms: number, fn: () => void) => this.#clock.setRareTimer(ms, fn) };
    const ticker = repeat(
      rare,
      1000,
      () => void this.loop.tick().catch((e) => this.#log.error({ err: String(e) }, "pass failed")),
    );
    // Done entries and orphans older than 7 days go hourly (never the running process's entries).
    const sweeper = repeat(
      rare,
      SWEEP_INTERVAL_MS,
      () => void this.journal.sweep().catch((e) => this.#log.error({ err: String(e) }, "journal sweep failed")),
    );
    try {
      if (this.#o.connect) {
        this.#client = new SessionClient({
          connect: this.#o.connect,
          delegate: this,
          log: this.#log,
          backoff: this.#o.backoff,
          handshakeTimeoutMs: this.#o.config.gateway.handshakeTimeoutMs,
          clock: this.#clock,
        });
        await this.#client.run(signal);
      } else {
        await new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
      }
    } finally {
      ticker.cancel();
      sweeper.cancel();
    }
  }

  /** Stops the dispatcher after running commands finish (and the held spec's first pass, when it still runs). */
  async stop(): Promise<void> {
    await this.#firstPass;
    await this.dispatcher.stop();
  }

  // ---- SessionDelegate ----

  async hello(ch: bcd.v1.Challenge.$Properties): Promise<Props<typeof bcd.v1.Hello>> {
    const meta = await this.journal.meta();
    const unacked = boundHelloResults((await this.dispatcher.unackedResults()).map(updateToWire));
    const id = this.#o.identity;
    return {
      node_id: id.nodeId,
      role: kindRoleOf(this.#o.role) ?? "node",
      journal_id: this.journal.journalId,
      boot_id: this.journal.bootId,
      incarnation_id: this.journal.incarnation,
      applied_generation: this.#held?.generation ?? 0,
      applied_spec_hash: this.#held?.specHash ?? "",
      capabilities: [...(this.#o.capabilities ?? [])],
      runtimes: [...(this.#o.runtimes ?? [])],
      kinds: kindsForRole(this.#o.role).map((k) => k.kind).filter((k) => this.#o.handlers.get(k) !== undefined),
      agent_version: AGENT_VERSION,
      protocol_version: PROTOCOLS.session,
      unacked_results: unacked,
      last_event_seq: meta.eventSeq,
      challenge_sig: await signSessionProof(id.key.privateKey, ch.nonce ?? new Uint8Array(), id.nodeId),
      cert_chain: id.certChain.map((c) => decodeMessage(bcd.v1.SignedCertificate, c)),
      hostname: this.#o.hostname ?? "",
    };
  }

  async welcome(w: bcd.v1.Welcome.$Properties): Promise<void> {
    const st = timestampMs(w.server_time);
    if (st !== undefined) {
      try {
        await this.journal.observeServerTime(st, "welcome");
      } catch (e) {
        if (e instanceof ServerTimeRegressed || e instanceof ServerTimeAhead) {
          throw new SessionProtocolError("time-mark", e.message, { cause: e });
        }
        throw e;
      }
      this.#serverOffset = st - this.#now();
      this.#welcomed = true;
    }
    await this.#takeBundle(w);
    this.#upgradeOnly = w.upgrade_only ?? false;
    await this.journal.setLastEpoch(Number(w.session_epoch ?? 0));
    if (w.ack?.journal_id === this.journal.journalId) {
      await this.journal.ackEvents(this.journal.journalId, Number(w.ack.event_seq ?? 0));
    }
    if (this.#o.onWelcome) {
      try {
        await this.#o.onWelcome();
      } catch (e) {
        if (!(e instanceof Error)) throw e;
        this.#log.warn({ err: e.message }, "after Welcome: the hook failed");
      }
    }
  }

  async established(out: SessionOut): Promise<void> {
    this.#out = out;
    this.#sentEventSeq = 0;
    this.#o.secrets?.attach((f) => this.#send(f));
    for (const u of await this.dispatcher.unackedResults()) out.send({ command_update: updateToWire(u) });
    if (!this.#held) this.#requestSpec(0, "NO_SPEC", "the journal holds no usable spec");
    const s = this.#latestStatus ?? (this.#held ? this.engine.snapshot() : undefined);
    if (s) out.send({ status: this.#statusReport(s) });
    await this.#flushEvents();
  }

  async frame(f: GatewayFrame, _out: SessionOut): Promise<void> {
    // A Command is taken while the ones before it are still in acceptance, so their `accepted` share a group commit;
    // every other frame waits until those are answered, as it did when each command was waited for.
    if (f.command) return await this.#intake.take(f.command);
    await this.#intake.settled();
    if (routeTunnelFrame(f, this.#o.tunnels, { send: (t) => this.#send(t) }, this.#log)) return;
    if (f.secret_response) {
      this.#o.secrets?.response(f.secret_response);
      return;
    }
    if (f.desired_state) await this.#desiredState(f.desired_state);
    else if (f.cancel) await this.#cancel(f.cancel);
    else if (f.ack) await this.#ack(f.ack);
    else if (f.heartbeat) {
      const st = timestampMs(f.heartbeat.server_time);
      if (st !== undefined) {
        try {
          await this.journal.observeServerTime(st, "heartbeat");
        } catch (e) {
          if (e instanceof ServerTimeAhead) throw new SessionProtocolError("time-mark", e.message, { cause: e });
          throw e;
        }
        // Forward only: a heartbeat behind the server time already reached moves nothing.
        this.#serverOffset = Math.max(this.#serverOffset, st - this.#now());
      }
    }
  }

  heartbeat(): Props<typeof bcd.v1.Heartbeat> {
    return { applied_generation: this.#held?.generation ?? 0 };
  }

  disconnected(reason: string): void {
    this.#out = undefined;
    this.#o.tunnels?.closeAll(`session closed: ${reason}`);
    this.#o.secrets?.detach(reason);
    this.#log.info({ reason }, "session closed");
  }

  // ---- EventSink ----

  async emit(cls: EventClass, event: EventInit, announce?: AllocationAnnouncement): Promise<void> {
    // Enums are read where used, never into module-level tables: a read defines the message's class (issue 24).
    const bytes = encodeMessage(bcd.v1.Event, {
      ...event,
      event_class: bcd.v1.Event.Class[cls.toUpperCase() as Uppercase<EventClass>],
    });
    const r = await this.journal.appendEvent(cls, bytes, announce);
    this.#log.debug({ event: event.type, outcome: r }, "event journaled");
    await this.#flushEvents();
  }

  // ---- internals ----

  #send(frame: NodeFrameInit): boolean {
    return this.#out?.send(frame) ?? false;
  }

  #update(u: CommandUpdate): void {
    // One info line per command, its result; ACKED and RUNNING at debug: each line is a write on the event loop's
    // thread, and three per command were a share of every command's cost (issue 24).
    const fields = { command_id: u.commandId, kind: u.kind, state: u.state, code: u.errorCode ?? u.reason };
    if (u.state === "ACKED" || u.state === "RUNNING") this.#log.debug(fields, "command update");
    else this.#log.info(fields, "command update");
    this.#send({ command_update: updateToWire(u) });
  }

  #requestSpec(have: number, reason: "MIN_GENERATION" | "NO_SPEC" | "PATCH_BASE_MISMATCH", detail: string): void {
    this.#log.info({ have_generation: have, reason }, "asking for the full spec");
    this.#send({
      spec_request: { have_generation: have, reason: bcd.v1.SpecRequest.Reason[reason], message: detail },
    });
  }

  async #command(c: Props<typeof bcd.v1.Command>): Promise<void> {
    try {
      await this.dispatcher.deliver(incomingFromWire(c));
    } catch (e) {
      if (e instanceof CommandDecodeError) {
        this.#log.warn({ err: forLog(e.message) }, "a command that cannot be taken was dropped");
        return;
      }
      throw e;
    }
  }

  async #cancel(c: bcd.v1.Cancel.$Properties): Promise<void> {
    const id = c.command_id ?? "";
    if (id === "" || new TextEncoder().encode(id).length > MAX_COMMAND_ID_BYTES) {
      this.#log.warn({ command_id: forLog(id) }, "a cancel with an empty or oversize command id was dropped");
      return;
    }
    await this.dispatcher.cancel(id, forLog(c.reason ?? ""));
  }

  /** Takes, keeps or refuses the trust bundle a `Welcome` carries (trust_rotation.ts); a refusal is never silent. */
  async #takeBundle(w: bcd.v1.Welcome.$Properties): Promise<void> {
    const d = await takeTrustBundle(this.#trustBytes, w, this.serverNow());
    if (d.action === "keep") return;
    if (d.action === "refuse") {
      this.#log.error({ why: d.why }, "trust bundle refused; keeping the held one");
      await this.emit("transition", {
        type: "TrustBundleRefused",
        transition: { subject: "trust-bundle", reason: "trust-bundle-refused", message: d.why },
      });
      return;
    }
    for (const warning of d.warnings) this.#log.warn({ warning }, "trust bundle rotation weakens enforcement");
    this.#trustBytes = d.bytes;
    this.#trust = trustBundleFromWire(d.bytes);
    this.#bundleUnbatched = unbatchedFromWire(d.bytes);
    await saveTrustBundle(this.journal.dataDir, d.bytes);
    this.#log.info({ warnings: d.warnings.length }, "trust bundle taken");
    if (d.warnings.length > 0) {
      await this.emit("transition", {
        type: "TrustBundleRotated",
        transition: { subject: "trust-bundle", reason: "trust-bundle-weakened", message: d.warnings.join("; ") },
      });
    }
  }

  async #ack(a: bcd.v1.Ack.$Properties): Promise<void> {
    if (a.command_ids && a.command_ids.length > 0) await this.dispatcher.onAck(a.command_ids);
    if (a.journal_id === this.journal.journalId && a.event_seq) {
      await this.journal.ackEvents(this.journal.journalId, Number(a.event_seq));
      await this.#flushEvents();
    }
  }

  async #desiredState(ds: bcd.v1.DesiredState.$Properties): Promise<void> {
    const d = await takeDesiredState(ds, {
      nodeId: this.#o.identity.nodeId,
      held: this.#held,
      trust: this.#trust,
      serverNow: this.serverNow(),
    });
    switch (d.action) {
      case "ignore":
        this.#log.debug({ why: d.why }, "desired state ignored");
        return;
      case "refuse":
        this.#log.warn({ why: d.why }, "desired state refused, not applied");
        return;
      case "request":
        this.#requestSpec(this.#held?.generation ?? 0, d.reason, d.why);
        return;
      case "apply": {
        // A merged patch journals its provenance (the signed spec and patches it came from) in place of a signature.
        const signature = d.signature ??
          (d.patch ? extendProvenance(this.#heldRecord, d.patch.bytes, d.patch.signature) : undefined);
        await this.journal.putSpec({
          generation: d.held.generation,
          bytes: d.bytes,
          hash: d.held.specHash,
          ...(signature ? { signature } : {}),
        });
        this.#heldRecord = { bytes: d.bytes, ...(signature ? { signature } : {}) };
        await this.journal.setAppliedGeneration(d.held.generation);
        this.#held = d.held;
        this.#log.info({ generation: d.held.generation }, "desired state applied");
        this.#send({ heartbeat: this.heartbeat() });
        await this.dispatcher.onSpecApplied();
        await this.loop.onSpec(this.#heldSpec(d.held));
        return;
      }
    }
  }

  #heldSpec(h: HeldDesiredState) {
    const sections: Partial<Record<SectionName, unknown>> = {};
    const spec = h.spec as Record<string, unknown>;
    for (const k of ["host", "devices", "instances", "access", "telemetry", "daemon", "site"] as const) {
      if (spec[k] != null) sections[k] = spec[k];
    }
    const unknownSections = h.unknownSections.map((u) => ({ field: u.field, empty: u.empty }));
    return { generation: h.generation, specHash: h.specHash, sections, unknownSections };
  }

  #status(s: StatusSnapshot): void {
    this.#latestStatus = s;
    this.#send({ status: this.#statusReport(s) });
  }

  #statusReport(s: StatusSnapshot): Props<typeof bcd.v1.StatusReport> {
    return {
      observed_generation: s.observed_generation,
      applied_generation: s.applied_generation,
      applied_spec_hash: s.applied_spec_hash,
      sections: s.sections.map((x) => ({
        section: x.section,
        state: bcd.v1.SectionStatus.State[x.state],
        generation: x.generation,
        reason: x.reason,
        message: x.message,
      })),
      conditions: s.conditions.map((c) => ({ ...c })),
      ...(this.#o.instances ? this.#instancesReport(this.#o.instances()) : {}),
    };
  }

  #instancesReport(listing: InstanceListing): Props<typeof bcd.v1.StatusReport> {
    return {
      instances: listing.instances.map((i) => ({
        id: i.id,
        runtime: i.runtime,
        state: bcd.v1.InstanceStatus.State[i.state],
        message: i.message,
        managed: i.managed,
        vcpus: i.vcpus,
        memory_bytes: i.memoryBytes,
        ...(i.identityReboundRef ? { identity_rebound_ref: i.identityReboundRef } : {}),
      })),
      instances_complete: listing.complete,
      ...(listing.volumeStorage
        ? {
          volume_storage: {
            total_bytes: listing.volumeStorage.totalBytes,
            available_bytes: listing.volumeStorage.availableBytes,
            reserved_bytes: listing.volumeStorage.reservedBytes,
            committed_bytes: listing.volumeStorage.committedBytes,
            outstanding_bytes: listing.volumeStorage.outstandingBytes,
          },
        }
        : {}),
    };
  }

  async #flushEvents(): Promise<void> {
    if (!this.#out || this.#flushing) return;
    this.#flushing = true;
    try {
      for (;;) {
        const evs = await this.journal.unackedEvents({ afterSeq: this.#sentEventSeq, limit: 256 });
        if (evs.length === 0 || !this.#out) return;
        const now = this.#now();
        const events: Props<typeof bcd.v1.Event>[] = [];
        for (const e of evs) {
          try {
            const ev = decodeMessage(bcd.v1.Event, e.payload);
            events.push({ ...ev, seq: e.seq, age_ms: Math.max(0, now - e.createdAt) });
          } catch (err) {
            if (!(err instanceof WireDecodeError)) throw err;
            events.push({ seq: e.seq, type: "undecodable" });
          }
        }
        if (!this.#send({ event_batch: { journal_id: this.journal.journalId, events } })) return;
        this.#sentEventSeq = evs[evs.length - 1]!.seq;
      }
    } finally {
      this.#flushing = false;
    }
  }
}

/** The most unacked results a `Hello` carries; the rest are sent after `Welcome`, in order. */
export const MAX_HELLO_RESULTS = 64;
/** The most bytes of unacked results a `Hello` carries (far below any gateway's frame cap). */
export const MAX_HELLO_RESULT_BYTES = 512 * 1024;

/** The oldest results that fit {@link MAX_HELLO_RESULTS} and {@link MAX_HELLO_RESULT_BYTES}, in order. */
export function boundHelloResults(
  results: readonly Props<typeof bcd.v1.CommandUpdate>[],
): Props<typeof bcd.v1.CommandUpdate>[] {
  const out: Props<typeof bcd.v1.CommandUpdate>[] = [];
  let bytes = 0;
  for (const r of results) {
    if (out.length >= MAX_HELLO_RESULTS) break;
    const n = encodeMessage(bcd.v1.CommandUpdate, r).length;
    if (bytes + n > MAX_HELLO_RESULT_BYTES) break;
    out.push(r);
    bytes += n;
  }
  return out;
}
