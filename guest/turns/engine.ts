/**
 * The guest side of the turn protocol as a synchronous state machine with no I/O: inputs are connections, host
 * messages, turn exits and wrapped-child output; outputs are {@link EngineAction}s the agent carries out. Being
 * free of I/O, it is driven identically by the agent, the unit tests and the seeded chaos test.
 *
 * Rules (seed 001):
 * - `Hello` is the first message on every connection.
 * - Native mode: one turn runs at a time. A `RunTurn` that arrives while a turn runs, while the gate is closed, or
 *   behind earlier queued turns is queued in order; nothing is dropped. `DrainRequest` closes the gate and is
 *   answered with `DrainAck{in_flight}` (the running turn, or `null`). `DrainCancel` reopens the gate and replays
 *   the queue; so does a restore (see below), after `Resumed`.
 * - Race rule: a turn whose `TurnStarted` was emitted before the `DrainRequest` was handled is in flight and wins.
 * - Wrap mode: turns are the child's marker lines; drain is passive (reported, never gated or queued).
 * - Restore detection (bcd's reading of "first message after a restore"): a connection accepted while the gate is
 *   closed by a drain is the target host reaching the restored VM. The guest sends `Hello`, then `Resumed{ts}`,
 *   reopens the gate and replays. The old connection is not waited for: after a restore a TCP connection of the
 *   source may look alive to the guest until it next writes. A host that reconnects to a VM it is still draining
 *   gets `Resumed` too, which tells it the gate is open again and its drain must start over.
 * - `Secrets` are kept in memory only and handed to turn processes (native) or the wrapped child (wrap, and with
 *   await-secrets the child is started only once the first `Secrets` arrived).
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import type { GuestMessage, HostMessage } from "../../core/turns/mod.ts";

/** An id the agent gives each connection. */
export type ConnId = number;

/** What the agent must do. */
export type EngineAction =
  | { readonly kind: "send"; readonly conn: ConnId; readonly msg: GuestMessage }
  /** Native mode: run the turn command once for this turn. */
  | { readonly kind: "start-turn"; readonly turnId: number; readonly env: Readonly<Record<string, string>> }
  /** Wrap mode: start the wrapped child with these extra variables. */
  | { readonly kind: "spawn-wrap"; readonly env: Readonly<Record<string, string>> };

/** The wrap-mode settings. */
export interface WrapSettings {
  readonly startMarker: string;
  readonly endMarker: string;
  /** Start the child only after the first Secrets, with them in its environment. */
  readonly awaitSecrets: boolean;
}

/** Options for {@link TurnsEngine}. */
export interface TurnsEngineOptions {
  readonly vmId: string;
  readonly guestdVersion: string;
  /** `native` (turns driven by RunTurn) or wrap mode with its settings. */
  readonly mode: "native" | WrapSettings;
  /** Integer nanoseconds since the Unix epoch. */
  readonly now: () => bigint;
  readonly logger: Logger;
}

/** The default wrap-mode markers. */
export const DEFAULT_START_MARKER = "@@TURN_START@@";
/** The default wrap-mode end marker. */
export const DEFAULT_END_MARKER = "@@TURN_END@@";

/** The guest turn state machine. */
export class TurnsEngine {
  readonly #o: TurnsEngineOptions;
  readonly #log: Logger;
  readonly #conns = new Set<ConnId>();
  #gateOpen = true;
  #drainConn: ConnId | null = null;
  #inFlight: number | null = null;
  readonly #queue: number[] = [];
  #highestTurn = -1;
  #secrets: Readonly<Record<string, string>> | null = null;
  #wrapSpawned = false;
  #nextWrapTurn = 0;

  constructor(opts: TurnsEngineOptions) {
    this.#o = opts;
    this.#log = opts.logger;
  }

  /** Whether new turns may start. */
  get gateOpen(): boolean {
    return this.#gateOpen;
  }
  /** The running turn, or `null`. */
  get inFlight(): number | null {
    return this.#inFlight;
  }
  /** Queued turn ids, oldest first. */
  get queued(): readonly number[] {
    return [...this.#queue];
  }
  /** How many connections are open. */
  get connections(): number {
    return this.#conns.size;
  }
  /** Whether the wrapped child was started. */
  get wrapSpawned(): boolean {
    return this.#wrapSpawned;
  }

  /** Called once before any connection: in wrap mode without await-secrets the child starts now. */
  start(): EngineAction[] {
    const w = this.#wrap();
    if (w !== null && !w.awaitSecrets) return this.#spawnWrap({});
    return [];
  }

  /** A new connection: `Hello` first; after a restore also `Resumed`, then the queue replays. */
  connected(conn: ConnId): EngineAction[] {
    this.#conns.add(conn);
    const out: EngineAction[] = [{
      kind: "send",
      conn,
      msg: { type: "Hello", vm_id: this.#o.vmId, guestd_version: this.#o.guestdVersion },
    }];
    if (!this.#gateOpen && this.#drainConn !== null) {
      this.#log.info({ event: "turns_resumed", conn, queued: this.#queue.length }, "restored: resuming turns");
      out.push({ kind: "send", conn, msg: { type: "Resumed", ts: this.#o.now() } });
      out.push(...this.#reopen());
    }
    return out;
  }

  /** A connection went away. The gate stays as it is: a drain outlives its connection (the snapshot follows it). */
  disconnected(conn: ConnId): void {
    this.#conns.delete(conn);
  }

  /** One decoded host message from `conn`. */
  received(conn: ConnId, msg: HostMessage): EngineAction[] {
    switch (msg.type) {
      case "Ping":
        return [{ kind: "send", conn, msg: { type: "Pong" } }];
      case "Pong":
        return [];
      case "Secrets":
        return this.#onSecrets(msg.env);
      case "DrainRequest":
        this.#gateOpen = false;
        this.#drainConn = conn;
        this.#log.info(
          { event: "drain_request", conn, deadline_ms: msg.deadline_ms, in_flight: this.#inFlight },
          "drain: gate closed",
        );
        return [{ kind: "send", conn, msg: { type: "DrainAck", in_flight: this.#inFlight } }];
      case "DrainCancel":
        if (this.#gateOpen) {
          this.#log.info({ event: "drain_cancel_ignored", conn }, "DrainCancel with the gate open");
          return [];
        }
        this.#log.info({ event: "drain_cancel", conn, queued: this.#queue.length }, "drain cancelled: gate open");
        return this.#reopen();
      case "RunTurn":
        return this.#onRunTurn(conn, msg.turn_id);
    }
  }

  /** Native mode: the process of `turnId` exited. */
  turnExited(turnId: number, code: number): EngineAction[] {
    if (this.#inFlight !== turnId) {
      this.#log.warn({ event: "turn_exit_unknown", turn_id: turnId }, "exit of a turn that is not running");
      return [];
    }
    this.#log.info({ event: "turn_ended", turn_id: turnId, code }, "turn ended");
    this.#inFlight = null;
    const out = this.#broadcast({ type: "TurnEnded", turn_id: turnId, ts: this.#o.now() });
    out.push(...this.#startNext());
    return out;
  }

  /** Wrap mode: one line of the child's stdout (without its newline). */
  wrapLine(line: string): EngineAction[] {
    const w = this.#wrap();
    if (w === null) throw new TypeError("wrapLine() in native mode");
    if (line === w.startMarker) {
      if (this.#inFlight !== null) {
        this.#log.warn({ event: "wrap_marker_unbalanced", turn_id: this.#inFlight }, "start marker inside a turn");
        return [];
      }
      const id = this.#nextWrapTurn++;
      this.#inFlight = id;
      if (!this.#gateOpen) {
        this.#log.warn({ event: "wrap_turn_while_drained", turn_id: id }, "turn began while drained (passive)");
      }
      return this.#broadcast({ type: "TurnStarted", turn_id: id, ts: this.#o.now() });
    }
    if (line === w.endMarker) {
      if (this.#inFlight === null) {
        this.#log.warn({ event: "wrap_marker_unbalanced" }, "end marker outside a turn");
        return [];
      }
      const id = this.#inFlight;
      this.#inFlight = null;
      return this.#broadcast({ type: "TurnEnded", turn_id: id, ts: this.#o.now() });
    }
    this.#log.info({ event: "wrap_output", line }, "workload output");
    return [];
  }

  /** Wrap mode: the child exited; a turn it left open is ended so the host never waits on it. */
  wrapExited(code: number): EngineAction[] {
    this.#log.info({ event: "wrap_exited", code, in_flight: this.#inFlight }, "wrapped command exited");
    if (this.#inFlight === null) return [];
    const id = this.#inFlight;
    this.#inFlight = null;
    return this.#broadcast({ type: "TurnEnded", turn_id: id, ts: this.#o.now() });
  }

  #wrap(): WrapSettings | null {
    return this.#o.mode === "native" ? null : this.#o.mode;
  }

  #onSecrets(env: Readonly<Record<string, string>>): EngineAction[] {
    const first = this.#secrets === null;
    this.#secrets = { ...(this.#secrets ?? {}), ...env };
    this.#log.info({ event: "secrets_received", count: Object.keys(env).length, first }, "secrets received");
    const w = this.#wrap();
    if (w !== null && w.awaitSecrets && !this.#wrapSpawned) return this.#spawnWrap(this.#secrets);
    return [];
  }

  #spawnWrap(env: Readonly<Record<string, string>>): EngineAction[] {
    this.#wrapSpawned = true;
    return [{ kind: "spawn-wrap", env }];
  }

  #onRunTurn(conn: ConnId, turnId: number): EngineAction[] {
    if (this.#wrap() !== null) {
      this.#log.warn({ event: "run_turn_refused", conn, turn_id: turnId }, "RunTurn in wrap mode: no turn command");
      return [];
    }
    if (turnId <= this.#highestTurn) {
      this.#log.warn(
        { event: "run_turn_refused", conn, turn_id: turnId, highest: this.#highestTurn },
        "turn id not above the highest seen (turn ids are monotonic); duplicate ignored",
      );
      return [];
    }
    this.#highestTurn = turnId;
    this.#queue.push(turnId);
    if (!this.#gateOpen) this.#log.info({ event: "turn_queued", turn_id: turnId }, "gate closed: turn queued");
    return this.#startNext();
  }

  #startNext(): EngineAction[] {
    if (!this.#gateOpen || this.#inFlight !== null) return [];
    const id = this.#queue.shift();
    if (id === undefined) return [];
    this.#inFlight = id;
    this.#log.info({ event: "turn_started", turn_id: id }, "turn started");
    const out = this.#broadcast({ type: "TurnStarted", turn_id: id, ts: this.#o.now() });
    out.push({ kind: "start-turn", turnId: id, env: this.#secrets ?? {} });
    return out;
  }

  #reopen(): EngineAction[] {
    this.#gateOpen = true;
    this.#drainConn = null;
    return this.#wrap() === null ? this.#startNext() : [];
  }

  #broadcast(msg: GuestMessage): EngineAction[] {
    return [...this.#conns].map((conn) => ({ kind: "send", conn, msg }));
  }
}
