/**
 * Exec tunnels, the node half (000 §Break-glass SSH and tunnel keys): an `OpenTunnel` on the session carries an exec
 * ticket; the node verifies it ({@link verifyTicket}) against the JWKS held, records its `jti` in the journal until it
 * expires (a `jti` already used is `ticket-replayed`, a full set `tickets-full`), dials the instance on its port
 * through a {@link TunnelDialer} (on a host, from the host's own address on the instance's bridge) and relays bytes
 * both ways as `TunnelData`, closing on either side's end with `TunnelClose`.
 *
 * Flow control: each direction may have at most {@link TUNNEL_WINDOW} bytes sent and not yet acknowledged. The node
 * acknowledges gateway bytes (`TunnelData.ack`) once it has written them to the instance, and stops reading the
 * instance once a window of its own bytes waits for the gateway's acks (the read that crossed it passes the window
 * by less than one read). A gateway that passes the window is cut off
 * (`flow-control`): the node never buffers more than one window per tunnel.
 *
 * A refusal is a `TunnelClose` with the reason (`ticket-expired`, `ticket-replayed`, `unknown-kid`, …) and a
 * message; nothing is dialed before the ticket passed and its `jti` is on disk.
 *
 * @module
 */
import { TicketReplayed, TicketsFull } from "../journal/errors.ts";
import type { Logger } from "../log/mod.ts";
import type { JwksHolder } from "./jwks.ts";
import { TicketRefused, verifyTicket } from "./ticket.ts";

/** Bytes in flight per direction per tunnel. */
export const TUNNEL_WINDOW = 256 * 1024;
/** The largest `TunnelData` payload the node sends. */
export const TUNNEL_CHUNK = 32 * 1024;
/** Tunnels open at once per session. */
export const MAX_TUNNELS = 64;
/** The only port a tunnel dials (sshd on the instance). */
export const TUNNEL_PORT = 22;

/** A connection to the instance. */
export interface TunnelConn {
  readonly readable: ReadableStream<Uint8Array>;
  write(b: Uint8Array): Promise<void>;
  close(): void;
}

/** Dials an instance; throws {@link TunnelDialError} with a reason when it cannot. */
export interface TunnelDialer {
  dial(instance: string, port: number): Promise<TunnelConn>;
}

/** A dial that failed, with its reason (`instance-unknown`, `address-ambiguous`, `no-host-address`, `dial-failed`). */
export class TunnelDialError extends Error {
  override name = "TunnelDialError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The frames the node sends for tunnels. */
export type TunnelOutFrame =
  | { readonly tunnel_data: { tunnel_id: string; data?: Uint8Array; ack?: number } }
  | { readonly tunnel_close: { tunnel_id: string; reason: string; message: string } };

/** Where tunnel frames go (the session); `false` when the session is gone. */
export interface TunnelOut {
  send(frame: TunnelOutFrame): boolean;
}

/** The journal's used-`jti` set. */
export interface TicketLedger {
  /** Throws `TicketReplayed` (`ticket-replayed`) or `TicketsFull` (`tickets-full`). */
  useExecTicket(jti: string, expiresAt: number): Promise<void>;
}

/** Options of {@link Tunnels}. */
export interface TunnelsOptions {
  readonly nodeId: string;
  readonly jwks: JwksHolder;
  readonly ledger: TicketLedger;
  readonly dialer: TunnelDialer;
  /** Server time now, ms, floored at the server time mark. */
  serverNow(): Promise<number>;
  /**
   * Resolves when the JWKS and the instances held are the held spec's: after a restart the agent's first pass over
   * the journal's spec runs beside the session, and a ticket judged before it ends would be refused `unknown-kid`
   * (or its instance `instance-unknown`) although the spec grants it. Absent: ready at once.
   */
  ready?(): Promise<void>;
  readonly log: Logger;
  readonly window?: number;
  /** Called when a tunnel stops reading the instance to wait for acks (tests wait on it). */
  readonly onPark?: (tunnelId: string, inFlight: number) => void;
}

interface _Tunnel {
  readonly id: string;
  conn?: TunnelConn;
  /** Gateway bytes received before the dial completed. */
  pending: Uint8Array[];
  /** Gateway bytes received and not yet acknowledged. */
  inFlightIn: number;
  /** Node bytes sent and not yet acknowledged. */
  inFlightOut: number;
  wakeReader?: () => void;
  writes: Promise<void>;
  closed: boolean;
}

/** The tunnels of one session. */
export class Tunnels {
  readonly #o: TunnelsOptions;
  readonly #window: number;
  readonly #open = new Map<string, _Tunnel>();
  #out: TunnelOut | undefined;

  constructor(o: TunnelsOptions) {
    this.#o = o;
    this.#window = o.window ?? TUNNEL_WINDOW;
  }

  /** Tunnels open now. */
  get size(): number {
    return this.#open.size;
  }

  /** Handles an `OpenTunnel`. Resolves once the tunnel relays or was refused. */
  async open(
    m: { tunnel_id?: string | null; ticket?: string | null; instance_id?: string | null; port?: number | null },
    out: TunnelOut,
  ): Promise<void> {
    this.#out = out;
    const id = m.tunnel_id ?? "";
    if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(id)) {
      out.send({
        tunnel_close: {
          tunnel_id: id.slice(0, 64),
          reason: "tunnel-malformed",
          message: "tunnel_id is not 1 to 64 of [A-Za-z0-9_.:-]",
        },
      });
      return;
    }
    if (this.#open.has(id)) return this.#refuse(id, "tunnel-exists", `tunnel ${id} is already open`, false);
    if (this.#open.size >= MAX_TUNNELS) {
      return this.#refuse(id, "too-many-tunnels", `${MAX_TUNNELS} tunnels are open`, false);
    }
    const t: _Tunnel = { id, pending: [], inFlightIn: 0, inFlightOut: 0, writes: Promise.resolve(), closed: false };
    this.#open.set(id, t);
    const instance = m.instance_id ?? "";
    const port = m.port ?? 0;
    try {
      if (port !== TUNNEL_PORT) {
        throw new TicketRefused("ticket-wrong-port", `tunnels dial port ${TUNNEL_PORT} only, not ${port}`);
      }
      await this.#o.ready?.();
      const claims = await verifyTicket(m.ticket ?? "", this.#o.jwks, {
        nodeId: this.#o.nodeId,
        instance,
        port,
        now: await this.#o.serverNow(),
      });
      await this.#o.ledger.useExecTicket(claims.jti, claims.expiresAt);
      this.#o.log.info({ tunnel: id, instance, jti: claims.jti }, "tunnel: ticket accepted; dialing");
      t.conn = await this.#o.dialer.dial(instance, port);
    } catch (e) {
      if (
        e instanceof TicketRefused || e instanceof TunnelDialError || e instanceof TicketReplayed ||
        e instanceof TicketsFull
      ) return this.#refuse(id, e.reason, e.message);
      this.#refuse(id, "tunnel-failed", e instanceof Error ? e.message : String(e));
      throw e;
    }
    if (t.closed) return t.conn.close();
    for (const b of t.pending.splice(0)) this.#write(t, b);
    void this.#pump(t);
  }

  /** Handles a `TunnelData` from the gateway: bytes for the instance and/or an ack of the node's bytes. */
  data(m: { tunnel_id?: string | null; data?: Uint8Array | null; ack?: number | null }): void {
    const t = this.#open.get(m.tunnel_id ?? "");
    if (!t || t.closed) return;
    const ack = m.ack ?? 0;
    if (ack > 0) {
      t.inFlightOut = Math.max(0, t.inFlightOut - ack);
      t.wakeReader?.();
    }
    const data = m.data;
    if (!data || data.length === 0) return;
    t.inFlightIn += data.length;
    if (t.inFlightIn > this.#window) {
      this.#end(t, "flow-control", `the gateway sent ${t.inFlightIn} bytes unacknowledged (window ${this.#window})`);
      return;
    }
    if (t.conn) this.#write(t, data);
    else t.pending.push(data);
  }

  /** Handles a `TunnelClose` from the gateway. */
  close(m: { tunnel_id?: string | null; reason?: string | null }): void {
    const t = this.#open.get(m.tunnel_id ?? "");
    if (t) this.#end(t, undefined, m.reason ?? "closed by the gateway");
  }

  /** Ends every tunnel (the session closed). */
  closeAll(why: string): void {
    for (const t of [...this.#open.values()]) this.#end(t, undefined, why);
  }

  #refuse(id: string, reason: string, message: string, drop = true): void {
    this.#o.log.warn({ tunnel: id, reason, err: message }, "tunnel refused");
    if (drop) {
      const t = this.#open.get(id);
      if (t) t.closed = true;
      this.#open.delete(id);
    }
    this.#out?.send({ tunnel_close: { tunnel_id: id, reason, message } });
  }

  #write(t: _Tunnel, b: Uint8Array): void {
    t.writes = t.writes.then(async () => {
      if (t.closed || !t.conn) return;
      await t.conn.write(b);
      t.inFlightIn -= b.length;
      this.#out?.send({ tunnel_data: { tunnel_id: t.id, ack: b.length } });
    }).catch((e) => this.#end(t, "instance-write-failed", e instanceof Error ? e.message : String(e)));
  }

  /** Reads the instance and sends its bytes, pausing while a window's worth waits for acks. */
  async #pump(t: _Tunnel): Promise<void> {
    const reader = t.conn!.readable.getReader();
    try {
      for (;;) {
        while (t.inFlightOut >= this.#window && !t.closed) {
          this.#o.onPark?.(t.id, t.inFlightOut);
          await new Promise<void>((r) => (t.wakeReader = r));
        }
        if (t.closed) return;
        const { value, done } = await reader.read();
        if (done || t.closed) break;
        for (let at = 0; at < value.length; at += TUNNEL_CHUNK) {
          const chunk = value.subarray(at, at + TUNNEL_CHUNK);
          t.inFlightOut += chunk.length;
          if (!this.#out?.send({ tunnel_data: { tunnel_id: t.id, data: chunk } })) {
            return this.#end(t, undefined, "the session is gone");
          }
        }
      }
      this.#end(t, "eof", "the instance closed the connection");
    } catch (e) {
      this.#end(t, "instance-read-failed", e instanceof Error ? e.message : String(e));
    } finally {
      reader.releaseLock();
    }
  }

  /** Ends `t`; `reason` set: tell the gateway (undefined: the gateway ended it, or the session is gone). */
  #end(t: _Tunnel, reason: string | undefined, message: string): void {
    if (t.closed) return;
    t.closed = true;
    this.#open.delete(t.id);
    t.wakeReader?.();
    try {
      t.conn?.close();
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource)) throw e;
    }
    this.#o.log.info({ tunnel: t.id, reason: reason ?? "gateway", msg: message }, "tunnel closed");
    if (reason !== undefined) this.#out?.send({ tunnel_close: { tunnel_id: t.id, reason, message } });
  }
}
