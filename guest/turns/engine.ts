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
 * - Channel authentication (issue 21, `core/turns/auth.ts`): with a channel key, every connection gets `Hello` and
 *   `AuthChallenge{nonce, epoch}`, and nothing from it but a valid `AuthProof` is acted on: any other message, a bad
 *   MAC or a stale epoch closes the connection (action `close`, with the reason). Turn events go only to authenticated connections. Without a key (a local unix socket or a device in
 *   tests) every connection counts as authenticated and no connection can ever prove a restore.
 * - Restore detection (bcd's reading of "first message after a restore"): the host that restored the VM proves the
 *   next epoch. A guest that receives a valid proof of a higher epoch takes it, answers `AuthOk`, sends `Resumed{ts}`
 *   (its clock as it stands, frozen since the snapshot), sets its clock from the proof's `time_ns` (action
 *   `fix-clock`) and, when a `DrainRequest` closed its gate, reopens it and replays. (A guest its host snapshotted
 *   without a drain has an open gate: it only takes the epoch and fixes its clock; the chaos test reaches this when
 *   a DrainCancel overtakes the ack the host acted on.) The old connection is not waited for:
 *   after a restore a TCP connection of the source may look alive to the guest until it next writes. Any other
 *   connection while drained, the host's own reconnection included, leaves the gate closed.
 * - `Secrets` are kept in memory only and handed to turn processes (native) or the wrapped child (wrap, and with
 *   await-secrets the child is started only once the first `Secrets` arrived).
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import {
  type AuthProof,
  type ChannelAuthRefusal,
  type ChannelKey,
  channelProof,
  type GuestMessage,
  type HostMessage,
  newNonce,
  type ProofInput,
  verifyChannelProof,
} from "../../core/turns/mod.ts";

/** An id the agent gives each connection. */
export type ConnId = number;

/** What the agent must do. */
export type EngineAction =
  | { readonly kind: "send"; readonly conn: ConnId; readonly msg: GuestMessage }
  /** Native mode: run the turn command once for this turn. */
  | { readonly kind: "start-turn"; readonly turnId: number; readonly env: Readonly<Record<string, string>> }
  /** Wrap mode: start the wrapped child with these extra variables. */
  | { readonly kind: "spawn-wrap"; readonly env: Readonly<Record<string, string>> }
  /** Close this connection: it failed authentication (after its other sends are written). */
  | { readonly kind: "close"; readonly conn: ConnId; readonly reason: ChannelAuthRefusal }
  /** After a proven restore: set the guest's wall clock to the host's (integer ns since the epoch). */
  | { readonly kind: "fix-clock"; readonly hostNs: bigint; readonly guestNs: bigint };

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
  /** The VM's channel key; without one no connection is challenged and none can prove a restore. */
  readonly channelKey?: ChannelKey;
  /** The restore epoch the guest starts in (0). */
  readonly epoch?: number;
  /** Fresh nonces (tests inject them). */
  readonly nonce?: () => string;
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
  /** Connections still to prove the key, with the nonce each was challenged with. */
  readonly #pending = new Map<ConnId, string>();
  #epoch: number;
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
    this.#epoch = opts.epoch ?? 0;
  }

  /** The restore epoch: raised by each proven restore. */
  get epoch(): number {
    return this.#epoch;
  }
  /** How many connections have proven the key (all of them without a key). */
  get authenticatedConnections(): number {
    return this.#conns.size;
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
  /** How many connections are open, authenticated or not. */
  get connections(): number {
    return this.#conns.size + this.#pending.size;
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

  /** A new connection: `Hello` first, then (with a key) the challenge it must answer before anything else. */
  connected(conn: ConnId): EngineAction[] {
    const out: EngineAction[] = [{
      kind: "send",
      conn,
      msg: { type: "Hello", vm_id: this.#o.vmId, guestd_version: this.#o.guestdVersion },
    }];
    if (this.#o.channelKey === undefined) {
      this.#conns.add(conn);
      return out;
    }
    const nonce = (this.#o.nonce ?? newNonce)();
    this.#pending.set(conn, nonce);
    out.push({ kind: "send", conn, msg: { type: "AuthChallenge", nonce, epoch: this.#epoch } });
    return out;
  }

  /** A connection went away. The gate stays as it is: a drain outlives its connection (the snapshot follows it). */
  disconnected(conn: ConnId): void {
    this.#conns.delete(conn);
    this.#pending.delete(conn);
  }

  /** One decoded host message from `conn`. */
  received(conn: ConnId, msg: HostMessage): EngineAction[] {
    const challenged = this.#pending.get(conn);
    if (challenged !== undefined) return this.#authenticate(conn, challenged, msg);
    if (!this.#conns.has(conn)) return []; // closed already
    switch (msg.type) {
      case "AuthProof":
        this.#log.warn({ event: "auth_proof_ignored", conn }, "AuthProof on a connection that needs none now");
        return [];
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

  #authenticate(conn: ConnId, guestNonce: string, msg: HostMessage): EngineAction[] {
    const key = this.#o.channelKey!;
    if (msg.type !== "AuthProof") return this.#refuse(conn, "unauthenticated", `${msg.type} before AuthProof`);
    const p: ProofInput = {
      vmId: this.#o.vmId,
      guestNonce,
      hostNonce: msg.nonce,
      epoch: msg.epoch,
      timeNs: msg.time_ns,
    };
    if (!verifyChannelProof(key, "host", p, msg.mac)) return this.#refuse(conn, "bad-proof", "the MAC does not match");
    if (msg.epoch < this.#epoch) {
      return this.#refuse(conn, "stale-epoch", `epoch ${msg.epoch} is below the guest's ${this.#epoch}`);
    }
    this.#pending.delete(conn);
    this.#conns.add(conn);
    const out: EngineAction[] = [{ kind: "send", conn, msg: { type: "AuthOk", mac: channelProof(key, "guest", p) } }];
    if (msg.epoch === this.#epoch) {
      this.#log.info(
        { event: "turns_authenticated", conn, epoch: msg.epoch, gate_open: this.#gateOpen },
        "host proven",
      );
      return out;
    }
    return out.concat(this.#restored(conn, msg));
  }

  #restored(conn: ConnId, proof: AuthProof): EngineAction[] {
    const from = this.#epoch;
    this.#epoch = proof.epoch;
    const guestNs = this.#o.now();
    this.#log.info(
      { event: "turns_resumed", conn, epoch: proof.epoch, from_epoch: from, queued: this.#queue.length },
      "restore proven: resuming turns",
    );
    const out: EngineAction[] = [{ kind: "send", conn, msg: { type: "Resumed", ts: guestNs } }];
    out.push({ kind: "fix-clock", hostNs: proof.time_ns, guestNs });
    // A guest restored without a drain (its host snapshotted it anyway) has no gate to reopen.
    return this.#gateOpen || this.#drainConn === null ? out : out.concat(this.#reopen());
  }

  #refuse(conn: ConnId, reason: ChannelAuthRefusal, why: string): EngineAction[] {
    this.#pending.delete(conn);
    this.#log.warn({ event: "turns_auth_refused", conn, reason }, `connection refused: ${why}`);
    return [{ kind: "close", conn, reason }];
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
