/**
 * The node's side of a session: connect, prove the node's key on the gateway's challenge (`Hello`), take `Welcome`,
 * then exchange frames until the channel closes, and reconnect with jittered backoff. Each phase refuses frames that
 * do not belong to it: before `Welcome` only `Challenge`, then `Welcome` (or a `SessionClose`).
 *
 * @module
 */
import {
  type bcd,
  decodeGatewayFrame,
  encodeNodeFrame,
  type GatewayFrame,
  type Props,
  WireDecodeError,
} from "../../proto/mod.ts";
import type { Logger } from "../log/mod.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import type { FrameTransport } from "./transport.ts";
import { forLog } from "../log/bounded_text.ts";
import { type Clock, realClock, repeat, type Timer } from "../clock.ts";

/** What the node may send. */
export type NodeFrameInit = Props<typeof bcd.v1.NodeFrame>;
/** A `Hello` under construction. */
export type HelloInit = Props<typeof bcd.v1.Hello>;

/** A frame that does not belong to the session's phase, or a session the node refuses. */
export class SessionProtocolError extends Error {
  override name = "SessionProtocolError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The session's phase. */
export type SessionPhase = "connecting" | "awaiting-challenge" | "awaiting-welcome" | "established" | "closed";

/** Sends frames on the current session. */
export interface SessionOut {
  /** False when the session is gone (the frame is not sent; replay covers it on the next session). */
  send(frame: NodeFrameInit): boolean;
  readonly epoch: number;
}

/** The agent behind the session. */
export interface SessionDelegate {
  /** The `Hello` answering `challenge`, signed with the node key. */
  hello(challenge: bcd.v1.Challenge.$Properties): Promise<HelloInit>;
  /** Checks and takes `Welcome`; throw {@link SessionProtocolError} to refuse it (the time-mark rule). */
  welcome(welcome: bcd.v1.Welcome.$Properties): Promise<void>;
  /** The session is up: replay unacked results and events, send status. */
  established(out: SessionOut): Promise<void>;
  /** Any frame after `Welcome`. */
  frame(frame: GatewayFrame, out: SessionOut): Promise<void>;
  /** The node's heartbeat content. */
  heartbeat(): Props<typeof bcd.v1.Heartbeat>;
  /** The session ended (reason for logs). */
  disconnected(reason: string): void;
}

/** Options of {@link SessionClient}. */
export interface SessionClientOptions {
  readonly connect: () => Promise<FrameTransport>;
  readonly delegate: SessionDelegate;
  readonly log: Logger;
  readonly backoff?: BackoffOptions;
  /** Heartbeat interval until `Welcome` names one (ms). */
  readonly heartbeatMs?: number;
  /** A session silent for this many heartbeat intervals is closed and reconnected. */
  readonly deadIntervals?: number;
  /** From connect to `Welcome` at most this many ms, else the session is closed (default {@link HANDSHAKE_TIMEOUT_MS}). */
  readonly handshakeTimeoutMs?: number;
  /** The heartbeat interval range a `Welcome` is clamped to (default {@link HEARTBEAT_RANGE_MS}). */
  readonly heartbeatRangeMs?: readonly [number, number];
  /** A session must stay up this long before the reconnect backoff starts again from its base (default {@link STABLE_SESSION_MS}). */
  readonly stableSessionMs?: number;
  /** The handshake and heartbeat timers, the backoff's sleeps and the session's age (`core/clock.ts`). */
  readonly clock?: Clock;
}

/** From opening the connection to `Welcome`: a gateway silent before Challenge or after Hello is dropped. */
export const HANDSHAKE_TIMEOUT_MS = 30_000;

/**
 * The range a gateway's `heartbeat_interval_ms` is clamped to: at least 200 ms (a dead window of at least 600 ms,
 * and no heartbeat storm) and at most 10 minutes (far below the 2^31 ms where timers overflow).
 */
export const HEARTBEAT_RANGE_MS: readonly [number, number] = [200, 600_000];

/** The heartbeat interval used when `Welcome` names none. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

/**
 * A session that stayed up this long resets the reconnect backoff; a gateway that welcomes and cuts at once keeps
 * meeting a growing delay.
 */
export const STABLE_SESSION_MS = 60_000;

/** The heartbeat interval for a `Welcome` asking `askedMs` (0: none asked), clamped to `range`. */
export function heartbeatInterval(askedMs: number, fallbackMs: number, range = HEARTBEAT_RANGE_MS): number {
  const v = askedMs > 0 ? askedMs : fallbackMs;
  return Math.min(range[1], Math.max(range[0], v));
}

/** Runs sessions until stopped. */
export class SessionClient {
  readonly #o: SessionClientOptions;
  readonly #backoff: Backoff;
  readonly #clock: Clock;
  #phase: SessionPhase = "closed";
  #epoch = 0;
  #transport: FrameTransport | undefined;
  #sessions = 0;
  #establishedAt: number | undefined;

  constructor(opts: SessionClientOptions) {
    this.#o = opts;
    this.#backoff = new Backoff(opts.backoff);
    this.#clock = opts.clock ?? realClock;
  }

  get phase(): SessionPhase {
    return this.#phase;
  }

  /** Sessions that reached `Welcome`. */
  get sessions(): number {
    return this.#sessions;
  }

  /** Closes the current session (the run loop reconnects unless stopped). */
  drop(reason = "dropped"): void {
    this.#transport?.close(1000, reason);
  }

  /** Connects, runs a session, reconnects with backoff; returns when `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let reason: string;
      this.#establishedAt = undefined;
      try {
        reason = await this.#session(signal);
      } catch (e) {
        reason = e instanceof Error ? e.message : String(e);
      }
      reason = forLog(reason);
      this.#phase = "closed";
      if (
        this.#establishedAt !== undefined &&
        this.#clock.monotonic() - this.#establishedAt >= (this.#o.stableSessionMs ?? STABLE_SESSION_MS)
      ) this.#backoff.reset();
      this.#o.delegate.disconnected(reason);
      if (signal.aborted) break;
      const wait = this.#backoff.next();
      this.#o.log.info({ wait_ms: wait, reason }, "session ended; reconnecting");
      await this.#clock.sleep(wait, signal);
    }
  }

  async #session(signal: AbortSignal): Promise<string> {
    this.#phase = "connecting";
    const handshakeMs = this.#o.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS;
    let handshakeExpired = false;
    let t: FrameTransport | undefined;
    // Armed before the first Hello: a rare timer, so that a start does not load Deno's Node timers (clock.ts).
    const handshake = this.#clock.setRareTimer(handshakeMs, () => {
      handshakeExpired = true;
      t?.close(1000, "handshake timeout");
    });
    try {
      t = await this.#o.connect();
    } catch (e) {
      handshake.cancel();
      throw e;
    }
    if (handshakeExpired) {
      t.close(1000, "handshake timeout");
      return `no Welcome within ${handshakeMs} ms`;
    }
    return await this.#established(t, signal, handshake, () => handshakeExpired, handshakeMs);
  }

  async #established(
    t: FrameTransport,
    signal: AbortSignal,
    handshake: Timer,
    handshakeExpired: () => boolean,
    handshakeMs: number,
  ): Promise<string> {
    this.#transport = t;
    const onAbort = () => t.close(1000, "shutdown");
    signal.addEventListener("abort", onAbort, { once: true });
    let heartbeat: Timer | undefined;
    let lastHeard = this.#clock.monotonic();
    try {
      this.#phase = "awaiting-challenge";
      let epoch = 0;
      const sessionOut: SessionOut = {
        send: (frame) => this.#phase === "established" && t.send(encodeNodeFrame(frame)),
        get epoch() {
          return epoch;
        },
      };
      for (;;) {
        const bytes = await t.receive();
        if (bytes === undefined) {
          if (handshakeExpired() && this.#phase !== "established") return `no Welcome within ${handshakeMs} ms`;
          return t.closedReason ?? "closed";
        }
        lastHeard = this.#clock.monotonic();
        let frame: GatewayFrame;
        try {
          frame = decodeGatewayFrame(bytes);
        } catch (e) {
          if (e instanceof WireDecodeError) {
            t.close(1002, "undecodable frame");
            return `gateway sent an undecodable frame: ${e.message}`;
          }
          throw e;
        }
        if (frame.close) {
          return `gateway closed the session: ${forLog(frame.close.reason ?? "")} ${forLog(frame.close.message ?? "")}`
            .trim();
        }
        switch (this.#phase) {
          case "awaiting-challenge": {
            if (!frame.challenge) throw this.#refuse(t, `expected Challenge, got ${frame.frame}`);
            const hello = await this.#o.delegate.hello(frame.challenge);
            t.send(encodeNodeFrame({ hello }));
            this.#phase = "awaiting-welcome";
            break;
          }
          case "awaiting-welcome": {
            if (!frame.welcome) throw this.#refuse(t, `expected Welcome, got ${frame.frame}`);
            try {
              await this.#o.delegate.welcome(frame.welcome);
            } catch (e) {
              if (e instanceof SessionProtocolError) {
                t.send(encodeNodeFrame({ close: { reason: e.reason, message: e.message } }));
                t.close(1008, e.reason);
                return `refused Welcome: ${e.message}`;
              }
              throw e;
            }
            handshake.cancel();
            epoch = Number(frame.welcome.session_epoch ?? 0);
            this.#epoch = epoch;
            this.#phase = "established";
            this.#sessions++;
            this.#establishedAt = this.#clock.monotonic();
            const every = heartbeatInterval(
              frame.welcome.heartbeat_interval_ms ?? 0,
              this.#o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
              this.#o.heartbeatRangeMs,
            );
            const dead = every * (this.#o.deadIntervals ?? 3);
            heartbeat = repeat(this.#clock, every, () => {
              if (this.#clock.monotonic() - lastHeard > dead) {
                t.close(1001, "gateway silent");
                return;
              }
              sessionOut.send({ heartbeat: this.#o.delegate.heartbeat() });
            });
            this.#o.log.info({ epoch, heartbeat_ms: every }, "session established");
            await this.#o.delegate.established(sessionOut);
            break;
          }
          case "established":
            if (frame.challenge || frame.welcome) throw this.#refuse(t, `unexpected ${frame.frame} after Welcome`);
            try {
              await this.#o.delegate.frame(frame, sessionOut);
            } catch (e) {
              if (e instanceof SessionProtocolError) {
                t.send(encodeNodeFrame({ close: { reason: e.reason, message: e.message } }));
                t.close(1008, e.reason);
                return `refused ${frame.frame}: ${e.message}`;
              }
              throw e;
            }
            break;
          default:
            throw this.#refuse(t, `frame in phase ${this.#phase}`);
        }
      }
    } finally {
      handshake.cancel();
      heartbeat?.cancel();
      signal.removeEventListener("abort", onAbort);
      t.close(1000, "session over");
      this.#transport = undefined;
    }
  }

  #refuse(t: FrameTransport, message: string): SessionProtocolError {
    t.send(encodeNodeFrame({ close: { reason: "protocol", message } }));
    t.close(1002, "protocol");
    return new SessionProtocolError("protocol", message);
  }

  /** The epoch of the last session that reached `Welcome`. */
  get epoch(): number {
    return this.#epoch;
  }
}
