/**
 * The command dispatcher: a delivered command goes through the journal's duplicate rules (`journal.resolve`), the
 * acceptance checks in the seed's order, then `BUSY` (lane credit, journal full), is journaled `accepted` (durable
 * before any side effect) and reported `ACKED`, queued on its lane, run by one of the lane's fixed workers with its
 * resource locks held (`RUNNING` reported, and for self-terminating kinds `running{boot_id}` journaled, immediately
 * before the side effect), and
 * finished with exactly one journaled terminal result. The credit is held from acceptance until that result is
 * journaled.
 *
 * Acceptance runs concurrently (so journal writes share fsyncs), but commands take credits and enter their lanes in
 * delivery order. A command whose `min_generation` is ahead is deferred (not journaled, no credit): the dispatcher
 * asks for the spec, re-runs the checks when a newer spec is applied, and settles it `STALE_GENERATION` at its
 * `not_after`. See cancel semantics on {@link Dispatcher.cancel}.
 *
 * Seed readings:
 * - "after it the command must not start" (000 §The command body): `not_after` is checked again when the command
 *   actually starts, once it holds its worker and its resource locks; past it, the command is journaled
 *   `REJECTED`/`EXPIRED` ({@link Journal.expire}) and never runs. Waiting for a lock or a worker never makes a late
 *   start.
 * - A graceful stop (SIGTERM) is not a cancel: only a `Cancel` from the gateway makes a command `CANCELLED`. Commands
 *   still queued when the lanes stop stay `accepted` in the journal, so the next process follows the recovery table
 *   (retry-safe: re-executed on redelivery after the checks run again; not retry-safe: `FAILED interrupted`).
 *
 * @module
 */
import type { Logger } from "../log/mod.ts";
import { silentLogger } from "../log/mod.ts";
import {
  type AcceptInput,
  CommandStateError,
  type DoneEntry,
  type Journal,
  JournalBusy,
  type OutcomeInput,
  type Resolution,
} from "../journal/mod.ts";
import { QuorumError } from "../pki/quorum.ts";
import type { QuorumTicket } from "../pki/quorum_ledger.ts";
import { type AcceptanceContext, runAcceptanceChecks } from "./acceptance.ts";
import type { CommandBody, IncomingCommand } from "./command.ts";
import type { KindHandler } from "./handlers.ts";
import { type KindSpec, type Lane, lookupKind } from "./kinds.ts";
import { LANE_LIMITS, LanePool, LaneStopped } from "./lanes.ts";
import { ResourceLocks } from "./locks.ts";
import { CommandFailed, InvalidPayload, LeftForRecovery, type TerminalRejectReason } from "./rejection.ts";
import {
  type CommandUpdate,
  signsResult,
  terminalUpdate,
  unsignedUpdate,
  updateFromEntry,
  type UpdateSink,
} from "./results.ts";
import { encodeAny } from "./any_codec.ts";
import { type Clock, realClock } from "../clock.ts";

/**
 * The journal operations the dispatcher uses (the real {@link Journal}; a test may wrap it). `expectWrite` is
 * optional: without it an accept whose checks end outside promise jobs may miss the group commit in progress.
 */
export type CommandJournal =
  & Partial<Pick<Journal, "expectWrite">>
  & Pick<
    Journal,
    | "resolve"
    | "accept"
    | "markRunning"
    | "finish"
    | "expire"
    | "cancel"
    | "reject"
    | "get"
    | "ackResults"
    | "unackedResults"
  >;

/** What the dispatcher asks the session for. */
export interface SpecRequester {
  /** `SpecRequest{have_generation, MIN_GENERATION}`. */
  requestSpec(haveGeneration: number, reason: "MIN_GENERATION", detail: string): void;
}

/** The dispatcher's wiring. */
export interface DispatcherOptions {
  readonly journal: CommandJournal;
  readonly acceptance: AcceptanceContext;
  readonly sink: UpdateSink;
  readonly specs: SpecRequester;
  /** The boot the process runs in (`journal.bootId`). */
  readonly bootId: string;
  /** The node's private key, for attested kinds' `node_sig`; absent: results go unsigned. */
  readonly nodeKey?: CryptoKey;
  readonly logger?: Logger;
  /** The deferral timers (`core/clock.ts`; tests fire them by hand). */
  readonly clock?: Pick<Clock, "setTimer">;
  /** Deferred commands kept at once; beyond it a deferral is `BUSY`. */
  readonly maxDeferred?: number;
  /** Lane limits; the seed's table by default. */
  readonly laneLimits?: Readonly<Record<Lane, { readonly credits: number; readonly workers: number }>>;
}

type Phase = "deferred" | "queued" | "running";

interface Flight {
  phase: Phase;
  readonly cmd: IncomingCommand;
  cancelRequested: boolean;
  cancelReason: string;
  readonly abort: AbortController;
  /** Deferred only: clears the not_after timer. */
  clearTimer?: () => void;
  /**
   * Queued or running only: settles once the terminal result is journaled and sent. Made by {@link
   * Dispatcher.settled} when it first waits for this flight (a promise per command otherwise nobody awaits).
   */
  done?: Promise<void>;
  settle?: () => void;
}

const DEFAULT_MAX_DEFERRED = 64;

/** Delivers commands, runs them on the lanes, and reports their updates. */
export class Dispatcher {
  readonly #o: DispatcherOptions;
  readonly #log: Logger;
  readonly #clock: Pick<Clock, "setTimer">;
  readonly #locks = new ResourceLocks();
  readonly #lanes: Record<Lane, LanePool>;
  readonly #flights = new Map<string, Flight>();
  /** Ids whose delivery is being processed, so a duplicate arriving meanwhile re-attaches. */
  readonly #delivering = new Set<string>();
  /** Cancels that arrived while their command was still going through acceptance, by id. */
  readonly #earlyCancels = new Map<string, string>();
  #gate: Promise<void> = Promise.resolve();
  #stopped = false;
  /** Aborted when the daemon stops: self-terminating handlers waiting for their own end give up their wait. */
  readonly #stopping = new AbortController();

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#log = options.logger ?? silentLogger();
    this.#clock = options.clock ?? realClock;
    const limits = options.laneLimits ?? LANE_LIMITS;
    this.#lanes = {
      control: new LanePool("control", this.#locks, limits.control),
      provision: new LanePool("provision", this.#locks, limits.provision),
      bulk: new LanePool("bulk", this.#locks, limits.bulk),
    };
  }

  /** The lane pools (status and tests). */
  get lanes(): Readonly<Record<Lane, LanePool>> {
    return this.#lanes;
  }

  /** The phase of a command the dispatcher holds, if any. */
  phaseOf(commandId: string): Phase | undefined {
    return this.#flights.get(commandId)?.phase;
  }

  /**
   * Handles one delivered command. Resolves once it is answered (`ACKED` and queued, `REJECTED`, deferred, or its
   * stored result resent), not when it finishes; see {@link settled}.
   */
  async deliver(cmd: IncomingCommand): Promise<void> {
    const id = cmd.body.id;
    const prev = this.#gate;
    let open!: () => void;
    this.#gate = new Promise<void>((r) => open = r);
    try {
      if (this.#stopped) return;
      if (
        this.#delivering.has(id) || this.#flights.get(id)?.phase === "queued" ||
        this.#flights.get(id)?.phase === "running"
      ) {
        await prev;
        return; // re-attach: the execution in flight reports
      }
      this.#delivering.add(id);
      try {
        await this.#process(cmd, prev, open);
      } finally {
        this.#delivering.delete(id);
        this.#earlyCancels.delete(id);
      }
    } finally {
      await prev;
      open();
    }
  }

  /** `open` lets the next delivery take its credit and lane slot; called as soon as this one has taken its own. */
  async #process(cmd: IncomingCommand, prev: Promise<void>, open: () => void): Promise<void> {
    const body = cmd.body;
    const spec = lookupKind(body.kind);
    const flags = { retrySafe: spec?.retrySafe ?? false, selfTerminating: spec?.selfTerminating ?? false };
    const r: Resolution = await this.#o.journal.resolve(body.id, flags);
    switch (r.action) {
      case "resend":
        await prev;
        return this.#send(await updateFromEntry(r.entry, this.#o.nodeKey));
      case "rebooted":
      case "interrupted":
        await prev;
        return this.#send(await terminalUpdate(body.id, r.entry.kind, r.result, this.#o.nodeKey));
      case "reattach":
        return;
      case "execute":
      case "reexecute":
        break;
    }
    // The signature check ends outside promise jobs (off the event loop's thread): the group commit in progress
    // waits for it, so this command's `accepted` joins it rather than the next one. Released before any wait on
    // the journal or on the delivery ahead (which may itself wait on the journal).
    const joining = this.#o.journal.expectWrite?.();
    let verdict;
    try {
      verdict = await runAcceptanceChecks(this.#o.acceptance, cmd);
    } finally {
      joining?.();
    }
    const input: AcceptInput = { kind: body.kind, ...flags };
    if (verdict.verdict === "reject") {
      await prev;
      this.#undefer(body.id);
      return await this.#rejectTerminal(body, input, verdict.reason, verdict.message);
    }
    if (verdict.verdict === "defer") {
      await prev;
      return this.#defer(cmd, verdict.message);
    }
    this.#undefer(body.id);
    let resources: readonly string[] = [];
    let invalid: InvalidPayload | undefined;
    try {
      resources = verdict.handler.resources?.(body) ?? [];
    } catch (e) {
      if (!(e instanceof InvalidPayload)) throw e;
      invalid = e;
    }
    // 6. BUSY, in delivery order.
    await prev;
    const lane = this.#lanes[verdict.spec.lane];
    if (!lane.reserveCredit()) {
      return this.#busy(body, `no free credit on the ${verdict.spec.lane} lane`);
    }
    const flight: Flight = {
      phase: "queued",
      cmd,
      cancelRequested: false,
      cancelReason: "",
      abort: new AbortController(),
    };
    this.#flights.set(body.id, flight);
    const early = this.#earlyCancels.get(body.id);
    if (early !== undefined) {
      flight.cancelRequested = true;
      flight.cancelReason = early;
    }
    const accepted = this.#accept(body, input, verdict.quorum);
    const release = () => {
      this.#flights.delete(body.id);
      lane.releaseCredit();
      flight.settle?.();
    };
    // The next delivery may take its credit now; its `accepted` joins this one's group commit.
    open();
    // The command enters its lane once `accepted` is durable, so a worker is never held waiting for that fsync (the
    // control lane has 4 workers for 8 credits). Accepts resolve in the order they were submitted, so commands still
    // enter their lane in delivery order.
    let ok: boolean;
    try {
      ok = await accepted;
    } catch (e) {
      release(); // only the journal can fail here (a stopped journal ends the daemon through its onStop)
      throw e;
    }
    if (!ok) return release();
    const job = {
      id: body.id,
      resources,
      run: async () => {
        try {
          await this.#run(flight, verdict.spec, verdict.handler, invalid);
        } catch (e) {
          // Only the journal can fail here (a stopped journal ends the daemon through its onStop).
          this.#log.error({ command_id: body.id, err: String(e) }, "command could not be settled");
        } finally {
          release();
        }
      },
      dropped: async () => {
        try {
          if (flight.cancelRequested) await this.#finish(body, { state: "CANCELLED", message: flight.cancelReason });
          else {
            // The lane stopped (a graceful stop): nobody cancelled it, so it stays `accepted` in the journal, for
            // redelivery and the recovery table of the next process.
            this.#log.info({ command_id: body.id, kind: body.kind }, "stopping: queued command left accepted");
          }
        } catch (e) {
          this.#log.error({ command_id: body.id, err: String(e) }, "cancelled command could not be settled");
        } finally {
          release();
        }
      },
    };
    try {
      lane.submit(job);
    } catch (e) {
      if (!(e instanceof LaneStopped)) throw e;
      // Stopped while its `accepted` was being made durable: left accepted, as a queued command is at a stop.
      return await job.dropped();
    }
    this.#send({ commandId: body.id, kind: body.kind, state: "ACKED", bootId: this.#o.bootId });
  }

  /** Records the quorum ticket and journals `accepted`; false (answered `BUSY` or rejected) when it cannot. */
  async #accept(body: CommandBody, input: AcceptInput, quorum: QuorumTicket | undefined): Promise<boolean> {
    try {
      if (quorum !== undefined) await this.#o.acceptance.ledger!.record(quorum, this.#o.acceptance.serverNow());
      await this.#o.journal.accept(body.id, input);
      return true;
    } catch (e) {
      if (e instanceof JournalBusy) {
        this.#busy(body, e.message);
        return false;
      }
      if (e instanceof QuorumError) {
        await this.#rejectTerminal(body, input, e.reason, e.message);
        return false;
      }
      if (e instanceof CommandStateError) {
        this.#log.warn({ command_id: body.id, err: e.message }, "command already in the journal; not run again");
        return false;
      }
      throw e;
    }
  }

  async #run(flight: Flight, spec: KindSpec, handler: KindHandler, invalid: InvalidPayload | undefined): Promise<void> {
    const body = flight.cmd.body;
    if (flight.cancelRequested) {
      return await this.#finish(body, { state: "CANCELLED", message: flight.cancelReason });
    }
    // not_after again, now that the command holds its worker and locks: waiting for either may have taken it past.
    const now = this.#o.acceptance.serverNow();
    if (body.notAfterMs === undefined || now > body.notAfterMs) {
      this.#log.info(
        { command_id: body.id, kind: body.kind, not_after: body.notAfterMs },
        "command expired before it started",
      );
      const message = `server time ${now} is past not_after ${body.notAfterMs} when the command would start`;
      return this.#send(await updateFromEntry(await this.#o.journal.expire(body.id, message), this.#o.nodeKey));
    }
    if (invalid !== undefined) {
      return await this.#finish(body, { state: "FAILED", code: "invalid-payload", message: invalid.message });
    }
    flight.phase = "running";
    // running{boot_id} is what tells a reboot the command caused from a crash; for other kinds `accepted` already
    // decides recovery (re-execute or interrupted by the retry-safe flag), so it would only cost an fsync.
    if (spec.selfTerminating) await this.#o.journal.markRunning(body.id);
    this.#send({ commandId: body.id, kind: body.kind, state: "RUNNING", bootId: this.#o.bootId });
    let outcome: OutcomeInput;
    try {
      const log = this.#log;
      let child: Logger | undefined;
      const res = await handler.run({
        command: body,
        signal: flight.abort.signal,
        stopping: this.#stopping.signal,
        bootId: this.#o.bootId,
        // Made when the handler first logs: most handlers never do, and a pino child per command is not free.
        get logger(): Logger {
          return child ??= log.child({ command_id: body.id, kind: body.kind, lane: spec.lane });
        },
      });
      outcome = {
        state: "SUCCEEDED",
        ...(res.result ? { body: encodeAny(res.result) } : {}),
        ...(res.message ? { message: res.message } : {}),
      };
    } catch (e) {
      if (e instanceof LeftForRecovery && spec.selfTerminating) {
        this.#log.info(
          { command_id: body.id, kind: body.kind },
          "stopping: the entry stays running for the next process",
        );
        return;
      }
      if (e instanceof InvalidPayload) outcome = { state: "FAILED", code: "invalid-payload", message: e.message };
      else if (e instanceof CommandFailed) outcome = { state: "FAILED", code: e.code, message: e.message };
      else {
        this.#log.error({ command_id: body.id, err: String(e) }, "command handler failed");
        outcome = { state: "FAILED", code: "internal", message: e instanceof Error ? e.message : String(e) };
      }
    }
    await this.#finish(body, outcome);
  }

  async #finish(body: CommandBody, outcome: OutcomeInput): Promise<void> {
    const done: DoneEntry = await this.#o.journal.finish(body.id, outcome);
    const key = this.#o.nodeKey;
    // An unsigned result (most kinds) is built at once, without the promise a signature needs.
    this.#send(
      signsResult(done.kind, done.result, key)
        ? await updateFromEntry(done, key)
        : unsignedUpdate(done.id, done.kind, done.result),
    );
  }

  async #rejectTerminal(body: CommandBody, input: AcceptInput, reason: TerminalRejectReason, message: string) {
    this.#log.info({ command_id: body.id, kind: body.kind, reason }, "command rejected");
    const done = await this.#o.journal.reject(body.id, input, reason, message);
    this.#send(await updateFromEntry(done, this.#o.nodeKey));
  }

  #busy(body: CommandBody, message: string): void {
    this.#send({
      commandId: body.id,
      kind: body.kind,
      state: "REJECTED",
      reason: "BUSY",
      message,
      bootId: this.#o.bootId,
    });
  }

  #defer(cmd: IncomingCommand, message: string): void {
    const body = cmd.body;
    const existing = this.#flights.get(body.id);
    if (existing === undefined) {
      const deferred = [...this.#flights.values()].filter((f) => f.phase === "deferred").length;
      if (deferred >= (this.#o.maxDeferred ?? DEFAULT_MAX_DEFERRED)) {
        return this.#busy(body, `${deferred} commands already wait for a newer spec`);
      }
    } else {
      existing.clearTimer?.();
    }
    const flight: Flight = {
      phase: "deferred",
      cmd,
      cancelRequested: false,
      cancelReason: "",
      abort: new AbortController(),
    };
    const delay = (body.notAfterMs ?? 0) - this.#o.acceptance.serverNow() + 1;
    const timer = this.#clock.setTimer(delay, () => void this.#redeliver(body.id));
    flight.clearTimer = () => timer.cancel();
    this.#flights.set(body.id, flight);
    this.#log.info({ command_id: body.id, min_generation: body.minGeneration }, "command deferred: " + message);
    const early = this.#earlyCancels.get(body.id);
    if (early !== undefined) {
      this.#earlyCancels.delete(body.id);
      void this.#cancelDeferred(flight, early).catch((e) =>
        this.#log.error({ command_id: body.id, err: String(e) }, "cancelling a deferred command failed")
      );
      return;
    }
    this.#o.specs.requestSpec(
      this.#o.acceptance.appliedGeneration(),
      "MIN_GENERATION",
      `command ${body.id}: ${message}`,
    );
  }

  #undefer(id: string): void {
    const f = this.#flights.get(id);
    if (f?.phase === "deferred") {
      f.clearTimer?.();
      this.#flights.delete(id);
    }
  }

  async #redeliver(id: string): Promise<void> {
    const f = this.#flights.get(id);
    if (f?.phase !== "deferred") return;
    try {
      await this.deliver(f.cmd);
    } catch (e) {
      this.#log.error({ command_id: id, err: String(e) }, "re-running a deferred command failed");
    }
  }

  /** A newer spec was applied: deferred commands run their checks again, in `seq` order. */
  async onSpecApplied(): Promise<void> {
    const deferred = [...this.#flights.values()].filter((f) => f.phase === "deferred")
      .sort((a, b) => a.cmd.body.seq - b.cmd.body.seq);
    await Promise.all(deferred.map((f) => this.#redeliver(f.cmd.body.id)));
  }

  /**
   * `Cancel{command_id, reason}`. A command still deferred or queued is journaled and reported `CANCELLED`; one
   * whose side effect started is told to stop between actions (its signal aborts) and reports its real outcome; a
   * done command keeps its result, which is resent while unacked; repeated cancels change nothing.
   */
  async cancel(commandId: string, reason = ""): Promise<void> {
    const f = this.#flights.get(commandId);
    if (f === undefined || (f.phase === "deferred" && this.#delivering.has(commandId))) {
      if (this.#delivering.has(commandId)) {
        // Still in acceptance: the cancel applies as soon as the command is deferred or queued.
        this.#earlyCancels.set(commandId, reason);
        return;
      }
      const entry = await this.#o.journal.get(commandId);
      if (entry?.state === "done" && !entry.resultAcked) this.#send(await updateFromEntry(entry, this.#o.nodeKey));
      return;
    }
    f.cancelReason = reason;
    if (f.phase === "deferred") return await this.#cancelDeferred(f, reason);
    if (f.cancelRequested) return;
    f.cancelRequested = true;
    if (f.phase === "queued") {
      const lane = this.#lanes[lookupKind(f.cmd.body.kind)!.lane];
      if (lane.cancelQueued(commandId)) return;
      // It reached a worker: the worker sees the request before the side effect starts.
      return;
    }
    f.abort.abort(new Error(`cancelled: ${reason}`));
  }

  /** Settles a deferred command `CANCELLED`, journaled (it has no entry yet) so a redelivery gets the same answer. */
  async #cancelDeferred(f: Flight, reason: string): Promise<void> {
    f.clearTimer?.();
    const body = f.cmd.body;
    if (this.#flights.get(body.id) === f) this.#flights.delete(body.id);
    const spec = lookupKind(body.kind);
    const input = {
      kind: body.kind,
      retrySafe: spec?.retrySafe ?? false,
      selfTerminating: spec?.selfTerminating ?? false,
    };
    let done: DoneEntry;
    try {
      done = await this.#o.journal.cancel(body.id, input, reason || undefined);
    } catch (e) {
      if (!(e instanceof JournalBusy)) throw e;
      this.#send({ commandId: body.id, kind: body.kind, state: "CANCELLED", message: reason, bootId: this.#o.bootId });
      return;
    }
    this.#send(await updateFromEntry(done, this.#o.nodeKey));
  }

  /** `Ack.command_ids`: those results stop being replayed. */
  async onAck(commandIds: readonly string[]): Promise<void> {
    await this.#o.journal.ackResults(commandIds);
  }

  /** The terminal updates to replay (`Hello.unacked_results`, and after a reconnect). */
  async unackedResults(): Promise<CommandUpdate[]> {
    const entries = await this.#o.journal.unackedResults();
    return await Promise.all(entries.map((e) => updateFromEntry(e, this.#o.nodeKey)));
  }

  /** Resolves once every queued and running command has its terminal result journaled and sent. */
  async settled(): Promise<void> {
    while (true) {
      const pending: Promise<void>[] = [];
      for (const f of this.#flights.values()) {
        if (f.phase !== "deferred") pending.push(f.done ??= new Promise<void>((r) => f.settle = r));
      }
      if (pending.length === 0 && this.#delivering.size === 0) return;
      await Promise.all(pending);
      await this.#gate;
    }
  }

  /**
   * Stops taking commands, clears deferral timers and stops the lanes after their running commands end. Queued
   * commands are not settled: they stay `accepted` for redelivery and the next process's recovery.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopping.abort();
    for (const f of this.#flights.values()) f.clearTimer?.();
    await Promise.all(Object.values(this.#lanes).map((l) => l.stop()));
  }

  /** Terminal updates sent so far, by kind and state (telemetry's `bcd.commands.settled`). */
  readonly settledCounts = new Map<string, Map<string, number>>();

  #send(u: CommandUpdate): void {
    if (u.state === "SUCCEEDED" || u.state === "FAILED" || u.state === "REJECTED" || u.state === "CANCELLED") {
      let by = this.settledCounts.get(u.kind);
      if (by === undefined) this.settledCounts.set(u.kind, by = new Map());
      by.set(u.state, (by.get(u.state) ?? 0) + 1);
    }
    try {
      this.#o.sink.send(u);
    } catch (e) {
      this.#log.warn({ command_id: u.commandId, err: String(e) }, "update sink refused an update");
    }
  }
}
