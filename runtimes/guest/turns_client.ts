/**
 * The host side of the turn protocol (seed 001): attaches to a guest's channel, waits for `Hello`, and drives a
 * migration's first phases on the typestate of `core/migration/`: Intent → Draining (`DrainRequest{deadline_ms}`) →
 * Quiescent, or `DrainCancel` and abort back to Stable when the guest does not ack in time or its in-flight turn
 * outlives the deadline. The client exposes the machine's current state and every transition event.
 *
 * With a channel key, `attach` answers the guest's `AuthChallenge` and checks its `AuthOk` (`core/turns/auth.ts`)
 * before the client is handed out; `restore: true` claims the next restore epoch, which only the host that has just
 * restored the VM from its snapshot may do: the guest then answers `Resumed` and reopens its gate.
 *
 * Timers are injected, so tests drive deadlines without sleeping.
 *
 * @module
 */
import { wallNanos } from "../../core/clock.ts";
import { type MigrationEvent, type Quiescent, type Stable, startMigrationFsm } from "../../core/migration/mod.ts";
import type { AnyMigrationState } from "../../core/migration/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import {
  ChannelAuthError,
  type ChannelKey,
  channelProof,
  decodeLine,
  DEFAULT_MAX_LINE_BYTES,
  encodeMessage,
  type GuestMessage,
  type Hello,
  type HostMessage,
  newNonce,
  type ProofInput,
  readLines,
  type Resumed,
  TurnsProtocolError,
  verifyChannelProof,
} from "../../core/turns/mod.ts";
import { type Clock, realClock } from "../../core/clock.ts";

/** `clock.setTimer` as a function that returns its cancel. */
function _timerOf(clock: Pick<Clock, "setTimer">): (ms: number, fn: () => void) => () => void {
  return (ms, fn) => {
    const t = clock.setTimer(ms, fn);
    return () => t.cancel();
  };
}

/** A byte duplex: a `Deno.Conn`, or anything shaped like one. */
export interface Duplex {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  close?(): void;
}

/** Options for {@link TurnsClient.attach}. */
export interface TurnsClientOptions {
  readonly logger: Logger;
  /** How long to wait for `Hello` (ms). */
  readonly helloTimeoutMs?: number;
  /** The Hello, wait and drain timers (`core/clock.ts`; tests move a fake by hand). */
  readonly clock?: Pick<Clock, "setTimer">;
  /** Integer nanoseconds since the Unix epoch, for FSM events. */
  readonly now?: () => bigint;
  readonly maxLineBytes?: number;
  /** Called for every migration transition event. */
  readonly onEvent?: (e: MigrationEvent) => void;
  /** The VM's channel key: required when the guest challenges (it always does when it holds one). */
  readonly channelKey?: ChannelKey;
  /** Claim the next restore epoch: only for the host that has just restored this VM from its snapshot. */
  readonly restore?: boolean;
  /** Sees every message after the handshake from the first on (turns a restored guest replays at once included). */
  readonly onMessage?: (m: GuestMessage) => void;
}

/** The guest did not answer in time, or the channel closed while waiting. */
export class TurnsClientError extends Error {
  override name = "TurnsClientError";
  constructor(readonly reason: "timeout" | "closed" | "no-hello" | "no-key" | "no-challenge", message: string) {
    super(`${reason}: ${message}`);
  }
}

/** How a drain ended. */
export type DrainOutcome =
  | { readonly result: "quiescent"; readonly state: Quiescent; readonly inFlightAtAck: number | null }
  | {
    readonly result: "aborted";
    readonly state: Stable;
    readonly reason: "drain-timeout" | "turn-in-flight-too-long" | "connection-lost";
    readonly inFlightAtAck: number | null | undefined;
  };

interface _Waiter {
  readonly match: (m: GuestMessage) => boolean;
  readonly resolve: (m: GuestMessage) => void;
  readonly reject: (e: Error) => void;
}

/** A connection to one guest's turn agent. */
export class TurnsClient {
  /** The guest's `Hello`. */
  readonly hello: Hello;
  readonly #o: TurnsClientOptions;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #duplex: Duplex;
  readonly #waiters = new Set<_Waiter>();
  readonly #listeners = new Set<(m: GuestMessage) => void>();
  #closed = false;
  #resumed: Resumed | null = null;
  #epoch = 0;
  #migration: AnyMigrationState | null = null;
  readonly #events: MigrationEvent[] = [];
  readonly #enc = new TextEncoder();

  private constructor(
    hello: Hello,
    duplex: Duplex,
    writer: WritableStreamDefaultWriter<Uint8Array>,
    o: TurnsClientOptions,
  ) {
    this.hello = hello;
    this.#duplex = duplex;
    this.#writer = writer;
    this.#o = o;
  }

  /** Attaches to a channel: the first message must be `Hello` (else `no-hello`). */
  static async attach(duplex: Duplex, opts: TurnsClientOptions): Promise<TurnsClient> {
    const lines = readLines(duplex.readable, opts.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
    const setTimer = _timerOf(opts.clock ?? realClock);
    const next = async (what: string): Promise<GuestMessage> => {
      const r = await new Promise<IteratorResult<{ line: string } | { refused: TurnsProtocolError }>>(
        (resolve, reject) => {
          const ms = opts.helloTimeoutMs ?? 30_000;
          const cancel = setTimer(ms, () => reject(new TurnsClientError("timeout", `no ${what}`)));
          lines.next().then((r) => {
            cancel();
            resolve(r);
          }, (e) => {
            cancel();
            reject(e);
          });
        },
      );
      if (r.done) throw new TurnsClientError("closed", `channel closed before ${what}`);
      if ("refused" in r.value) throw new TurnsClientError("no-hello", `${what} refused: ${r.value.refused.message}`);
      return decodeLine(r.value.line, "guest-to-host");
    };
    const hello = await next("Hello");
    if (hello.type !== "Hello") throw new TurnsClientError("no-hello", `first message is ${hello.type}, not Hello`);
    const writer = duplex.writable.getWriter();
    const client = new TurnsClient(hello, duplex, writer, opts);
    if (opts.channelKey !== undefined) {
      const ch = await next("AuthChallenge");
      if (ch.type !== "AuthChallenge") {
        throw new TurnsClientError("no-challenge", `the guest sent ${ch.type}, not AuthChallenge: it holds no key`);
      }
      const p: ProofInput = {
        vmId: hello.vm_id,
        guestNonce: ch.nonce,
        hostNonce: newNonce(),
        epoch: ch.epoch + (opts.restore === true ? 1 : 0),
        timeNs: opts.now ? opts.now() : wallNanos(),
      };
      const mac = channelProof(opts.channelKey, "host", p);
      await client.send({ type: "AuthProof", nonce: p.hostNonce, epoch: p.epoch, time_ns: p.timeNs, mac });
      let ok: GuestMessage;
      try {
        ok = await next("AuthOk");
      } catch (e) {
        if (e instanceof TurnsClientError && e.reason === "closed") {
          throw new ChannelAuthError("bad-proof", "the guest hung up on the proof (wrong key, or an epoch refused)");
        }
        throw e;
      }
      if (ok.type !== "AuthOk") throw new TurnsClientError("no-challenge", `the guest sent ${ok.type}, not AuthOk`);
      if (!verifyChannelProof(opts.channelKey, "guest", p, ok.mac)) {
        throw new ChannelAuthError("bad-guest-proof", "the guest's AuthOk does not prove the key");
      }
      client.#epoch = p.epoch;
      if (opts.restore === true) {
        const r = await next("Resumed");
        if (r.type !== "Resumed") throw new TurnsClientError("no-hello", `the guest sent ${r.type}, not Resumed`);
        client.#resumed = r;
      }
    }
    // Without a key: a guest that holds one challenges at once, and the pump ends the client when it sees that.
    if (opts.onMessage) client.#listeners.add(opts.onMessage);
    void client.#pump(lines);
    return client;
  }

  /** The restore epoch this connection proved (0 without a key). */
  get epoch(): number {
    return this.#epoch;
  }

  /** Whether the channel has closed. */
  get closed(): boolean {
    return this.#closed;
  }
  /** The guest's last `Resumed` on this connection: it was restored (or reconnected to while drained) and its
   * gate is open again. `null` when none came. */
  get resumed(): Resumed | null {
    return this.#resumed;
  }
  /** The current migration state, or `null` before the first drain. */
  get migration(): AnyMigrationState | null {
    return this.#migration;
  }
  /** Every migration transition event so far. */
  get events(): readonly MigrationEvent[] {
    return this.#events;
  }

  async #pump(
    lines: AsyncGenerator<{ line: string } | { refused: TurnsProtocolError }>,
  ): Promise<void> {
    try {
      for await (const ev of lines) {
        if ("refused" in ev) {
          this.#o.logger.warn({ event: "turns_line_refused", reason: ev.refused.reason }, ev.refused.message);
          continue;
        }
        if (ev.line.trim() === "") continue;
        let msg: GuestMessage;
        try {
          msg = decodeLine(ev.line, "guest-to-host");
        } catch (e) {
          if (!(e instanceof TurnsProtocolError)) throw e;
          this.#o.logger.warn({ event: "turns_line_refused", reason: e.reason }, e.message);
          continue;
        }
        if (msg.type === "AuthChallenge") {
          this.#o.logger.error({ event: "turns_no_key" }, "the guest challenges but this host holds no channel key");
          break;
        }
        if (msg.type === "Ping") {
          // A Pong that cannot be written means the connection is going; the reader sees its end and reports it.
          void this.send({ type: "Pong" }).catch((e) =>
            this.#o.logger.warn({ event: "turns_pong_not_sent", err: e }, "a Pong could not be sent")
          );
        }
        if (msg.type === "Resumed") this.#resumed = msg;
        for (const l of this.#listeners) l(msg);
        for (const w of [...this.#waiters]) {
          if (w.match(msg)) {
            this.#waiters.delete(w);
            w.resolve(msg);
          }
        }
      }
    } catch (e) {
      this.#o.logger.warn({ event: "turns_read_failed", err: String(e) }, "channel read failed");
    }
    this.#closed = true;
    for (const w of this.#waiters) w.reject(new TurnsClientError("closed", "channel closed"));
    this.#waiters.clear();
  }

  /** Calls `fn` for every message after `Hello`; returns an unsubscribe function. */
  onMessage(fn: (m: GuestMessage) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Sends one message. */
  async send(msg: HostMessage): Promise<void> {
    if (this.#closed) throw new TurnsClientError("closed", `cannot send ${msg.type}`);
    await this.#writer.write(this.#enc.encode(encodeMessage(msg, "host-to-guest")));
  }

  /** Waits for the next message matching `match`, at most `timeoutMs`. Register before sending what causes it. */
  waitFor<T extends GuestMessage>(match: (m: GuestMessage) => m is T, timeoutMs: number): Promise<T>;
  waitFor(match: (m: GuestMessage) => boolean, timeoutMs: number): Promise<GuestMessage>;
  waitFor(match: (m: GuestMessage) => boolean, timeoutMs: number): Promise<GuestMessage> {
    if (this.#closed) return Promise.reject(new TurnsClientError("closed", "channel closed"));
    const setTimer = _timerOf(this.#o.clock ?? realClock);
    return new Promise((resolve, reject) => {
      const w: _Waiter = {
        match,
        resolve: (m) => {
          cancel();
          resolve(m);
        },
        reject: (e) => {
          cancel();
          reject(e);
        },
      };
      const cancel = setTimer(timeoutMs, () => {
        this.#waiters.delete(w);
        reject(new TurnsClientError("timeout", `no matching message within ${timeoutMs} ms`));
      });
      this.#waiters.add(w);
    });
  }

  /** Sends `Ping` and waits for `Pong`. */
  async ping(timeoutMs = 10_000): Promise<void> {
    const pong = this.waitFor((m) => m.type === "Pong", timeoutMs);
    await this.send({ type: "Ping" });
    await pong;
  }

  /**
   * Drains the guest for migration `migrationId`: Stable → Intent → Draining, `DrainRequest{deadline_ms}`, then
   * Quiescent once the ack says nothing runs (or the named turn ends) before the deadline. Otherwise
   * `DrainCancel` and abort to Stable: `drain-timeout` (no ack), `turn-in-flight-too-long` (the turn outlived the
   * deadline) or `connection-lost`. In wrap mode the guest's drain is passive: a `TurnStarted` after the ack is
   * waited for like the acked turn, and one after Quiescent (see {@link onMessage}) means the caller should abort.
   */
  async drain(migrationId: string, deadlineMs: number): Promise<DrainOutcome> {
    if (this.#migration !== null && this.#migration.phase !== "Stable") {
      throw new TypeError(`a migration is in progress (${this.#migration.phase})`);
    }
    const intent = startMigrationFsm({
      vmId: this.hello.vm_id,
      migrationId,
      now: this.#o.now,
      onEvent: (e) => {
        this.#events.push(e);
        this.#o.logger.info({ ...e, ts: e.ts.toString() }, "migration transition");
        this.#o.onEvent?.(e);
      },
    }).go("Intent");
    this.#migration = intent;
    const draining = intent.go("Draining");
    this.#migration = draining;

    const setTimer = _timerOf(this.#o.clock ?? realClock);
    let inFlight: number | null | undefined = undefined; // undefined until the ack
    let acked: number | null | undefined = undefined;
    const settled = Promise.withResolvers<"quiescent" | "drain-timeout" | "turn-in-flight-too-long" | "lost">();
    const check = () => {
      if (inFlight === null) settled.resolve("quiescent");
    };
    const off = this.onMessage((m) => {
      if (m.type === "DrainAck" && inFlight === undefined) inFlight = acked = m.in_flight;
      else if (inFlight === undefined) return;
      else if (m.type === "TurnStarted") inFlight = m.turn_id; // wrap mode: drain is passive
      else if (m.type === "TurnEnded" && m.turn_id === inFlight) inFlight = null;
      check();
    });
    const cancelTimer = setTimer(deadlineMs, () => {
      settled.resolve(inFlight === undefined ? "drain-timeout" : "turn-in-flight-too-long");
    });
    const closedPoll = this.#whenClosed(() => settled.resolve("lost"));
    try {
      await this.send({ type: "DrainRequest", deadline_ms: deadlineMs });
    } catch (e) {
      this.#o.logger.warn({ event: "drain_send_failed", err: String(e) }, "DrainRequest not sent");
      settled.resolve("lost");
    }
    const how = await settled.promise;
    off();
    cancelTimer();
    closedPoll();
    if (how === "quiescent") {
      const q = draining.go("Quiescent");
      this.#migration = q;
      return { result: "quiescent", state: q, inFlightAtAck: acked ?? null };
    }
    if (how !== "lost") {
      // The drain ends aborted either way; a cancel the guest cannot be told of is logged, not thrown past the abort.
      await this.send({ type: "DrainCancel" }).catch((e) =>
        this.#o.logger.warn({ event: "turns_drain_cancel_not_sent", err: e }, "DrainCancel could not be sent")
      );
    }
    const reason = how === "lost" ? "connection-lost" : how;
    const stable = draining.abort(reason);
    this.#migration = stable;
    return { result: "aborted", state: stable, reason, inFlightAtAck: acked };
  }

  /** Aborts from Quiescent: `DrainCancel` to the guest, back to Stable. */
  async cancelDrain(q: Quiescent, reason: string): Promise<Stable> {
    await this.send({ type: "DrainCancel" });
    const s = q.abort(reason);
    this.#migration = s;
    return s;
  }

  #whenClosed(fn: () => void): () => void {
    const w: _Waiter = { match: () => false, resolve: () => {}, reject: () => fn() };
    if (this.#closed) fn();
    else this.#waiters.add(w);
    return () => this.#waiters.delete(w);
  }

  /** Closes the channel. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#writer.releaseLock();
    try {
      this.#duplex.close?.();
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource)) throw e;
    }
  }
}
