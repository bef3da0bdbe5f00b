/**
 * The `guest turns` agent: serves the turn protocol on its listeners, feeding a {@link TurnsEngine} and carrying
 * out what it decides (sending messages, running turn processes, supervising the wrapped command).
 *
 * In wrap mode the agent ends when the wrapped command exits, after its last messages are written, with the
 * command's exit code; in native mode it runs until its signal aborts.
 *
 * @module
 */
import { wallNanos } from "../../core/clock.ts";
import type { Logger } from "../../core/log/mod.ts";
import {
  type ChannelKey,
  decodeLine,
  DEFAULT_MAX_LINE_BYTES,
  encodeMessage,
  readLines,
  TurnsProtocolError,
} from "../../core/turns/mod.ts";
import { type ConnId, type EngineAction, TurnsEngine, type WrapSettings } from "./engine.ts";
import { startProcess } from "./processes.ts";
import type { TurnsConnection, TurnsListener } from "./transport.ts";

/** How turns are made. */
export type AgentMode =
  | { readonly kind: "native"; readonly turnArgv: readonly string[] }
  | ({ readonly kind: "wrap"; readonly argv: readonly string[] } & WrapSettings);

/** Options for {@link TurnsAgent}. */
export interface TurnsAgentOptions {
  readonly vmId: string;
  readonly guestdVersion: string;
  readonly mode: AgentMode;
  readonly listeners: readonly TurnsListener[];
  readonly logger: Logger;
  /** Integer nanoseconds since the Unix epoch; defaults to the wall clock. */
  readonly now?: () => bigint;
  readonly maxLineBytes?: number;
  readonly signal?: AbortSignal;
  /** The VM's channel key (see `core/turns/auth.ts`); without one connections are not authenticated. */
  readonly channelKey?: ChannelKey;
  /** Sets the guest's wall clock after a proven restore (integer ns since the Unix epoch); without it, logged. */
  readonly setClock?: (ns: bigint) => Promise<void>;
}

/** The environment variable that carries the turn id to each run of the turn command. */
export const TURN_ID_ENV = "SLEEPWALK_TURN_ID";

interface _Conn {
  readonly conn: TurnsConnection;
  chain: Promise<void>;
  dead: boolean;
}

/** The agent. */
export class TurnsAgent {
  readonly engine: TurnsEngine;
  readonly #o: TurnsAgentOptions;
  readonly #log: Logger;
  readonly #conns = new Map<ConnId, _Conn>();
  #nextConn = 0;
  readonly #done = Promise.withResolvers<number>();
  #finished = false;
  readonly #enc = new TextEncoder();

  constructor(opts: TurnsAgentOptions) {
    this.#o = opts;
    this.#log = opts.logger;
    const mode = opts.mode;
    this.engine = new TurnsEngine({
      vmId: opts.vmId,
      guestdVersion: opts.guestdVersion,
      mode: mode.kind === "native"
        ? "native"
        : { startMarker: mode.startMarker, endMarker: mode.endMarker, awaitSecrets: mode.awaitSecrets },
      now: opts.now ?? (() => wallNanos()),
      logger: opts.logger,
      channelKey: opts.channelKey,
    });
  }

  /** Serves until the wrapped command exits (its code) or the signal aborts (0). */
  run(): Promise<number> {
    const sig = this.#o.signal;
    if (sig?.aborted) return Promise.resolve(0);
    sig?.addEventListener("abort", () => void this.#finish(0), { once: true });
    this.#do(this.engine.start());
    for (const l of this.#o.listeners) void this.#accept(l);
    return this.#done.promise;
  }

  async #accept(l: TurnsListener): Promise<void> {
    this.#log.info({ event: "turns_listening", on: l.label }, "serving the turn protocol");
    try {
      for await (const conn of l) {
        if (this.#finished) {
          conn.close();
          break;
        }
        void this.#serve(conn);
      }
    } catch (e) {
      this.#log.error({ event: "listener_failed", on: l.label, err: String(e) }, "listener failed");
    }
  }

  async #serve(conn: TurnsConnection): Promise<void> {
    const id = ++this.#nextConn;
    const c: _Conn = { conn, chain: Promise.resolve(), dead: false };
    this.#conns.set(id, c);
    this.#log.info({ event: "turns_connected", conn: id, peer: conn.label }, "connection");
    this.#do(this.engine.connected(id));
    await c.chain; // Hello (and Resumed) are out before anything is read
    try {
      for await (const ev of readLines(conn.readable, this.#o.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES)) {
        if ("refused" in ev) {
          this.#refused(id, ev.refused);
          continue;
        }
        if (ev.line.trim() === "") continue;
        let msg;
        try {
          msg = decodeLine(ev.line, "host-to-guest");
        } catch (e) {
          if (!(e instanceof TurnsProtocolError)) throw e;
          this.#refused(id, e);
          continue;
        }
        this.#do(this.engine.received(id, msg));
      }
    } catch (e) {
      if (!c.dead) this.#log.warn({ event: "turns_read_failed", conn: id, err: String(e) }, "read failed");
    }
    this.#drop(id);
  }

  #refused(conn: ConnId, e: TurnsProtocolError): void {
    this.#log.warn({ event: "turns_line_refused", conn, reason: e.reason, type: e.messageType }, e.message);
  }

  #drop(id: ConnId): void {
    const c = this.#conns.get(id);
    if (c === undefined) return;
    this.#conns.delete(id);
    c.dead = true;
    this.engine.disconnected(id);
    c.conn.close();
    this.#log.info({ event: "turns_disconnected", conn: id }, "connection closed");
  }

  #do(actions: EngineAction[]): void {
    for (const a of actions) {
      switch (a.kind) {
        case "send":
          this.#send(a.conn, encodeMessage(a.msg, "guest-to-host"));
          break;
        case "start-turn":
          this.#startTurn(a.turnId, a.env);
          break;
        case "spawn-wrap":
          this.#spawnWrap(a.env);
          break;
        case "close":
          this.#closeAfterWrites(a.conn);
          break;
        case "fix-clock":
          this.#fixClock(a.hostNs, a.guestNs);
          break;
      }
    }
  }

  #send(id: ConnId, line: string): void {
    const c = this.#conns.get(id);
    if (c === undefined || c.dead) return;
    const bytes = this.#enc.encode(line);
    c.chain = c.chain.then(() => c.dead ? undefined : c.conn.write(bytes)).catch((e) => {
      if (c.dead) return;
      this.#log.warn({ event: "turns_write_failed", conn: id, err: String(e) }, "write failed; dropping");
      this.#drop(id);
    });
  }

  /** Ends a connection refused authentication once what was queued for it (its Hello) is written. */
  #closeAfterWrites(id: ConnId): void {
    const c = this.#conns.get(id);
    if (c === undefined) return;
    c.chain = c.chain.finally(() => this.#drop(id));
  }

  #fixClock(hostNs: bigint, guestNs: bigint): void {
    const skewMs = Number((hostNs - guestNs) / 1_000_000n);
    const set = this.#o.setClock;
    if (set === undefined) {
      this.#log.warn(
        { event: "clock_fixup_skipped", skew_ms: skewMs },
        "no clock setter: the guest clock is not fixed",
      );
      return;
    }
    set(hostNs).then(
      () => this.#log.info({ event: "clock_fixed", skew_ms: skewMs }, "guest clock set from the restoring host"),
      (e) => this.#log.error({ event: "clock_fixup_failed", skew_ms: skewMs, err: String(e) }, "clock not set"),
    );
  }

  #startTurn(turnId: number, env: Readonly<Record<string, string>>): void {
    const mode = this.#o.mode;
    if (mode.kind !== "native") return;
    const p = startProcess(mode.turnArgv, { ...env, [TURN_ID_ENV]: String(turnId) }, this.#log);
    void (async () => {
      for await (const line of p.lines) this.#log.info({ event: "turn_output", turn_id: turnId, line }, "turn output");
      const code = await p.status;
      if (!this.#finished) this.#do(this.engine.turnExited(turnId, code));
    })();
  }

  #spawnWrap(env: Readonly<Record<string, string>>): void {
    const mode = this.#o.mode;
    if (mode.kind !== "wrap") return;
    this.#log.info({ event: "wrap_spawn", cmd: mode.argv[0], secrets: Object.keys(env).length }, "starting command");
    const p = startProcess(mode.argv, env, this.#log);
    void (async () => {
      for await (const line of p.lines) this.#do(this.engine.wrapLine(line));
      const code = await p.status;
      this.#do(this.engine.wrapExited(code));
      await this.#finish(code);
    })();
  }

  async #finish(code: number): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    await Promise.all([...this.#conns.values()].map((c) => c.chain));
    for (const l of this.#o.listeners) l.close();
    for (const id of [...this.#conns.keys()]) this.#drop(id);
    this.#log.info({ event: "turns_agent_exit", code }, "turn agent stopping");
    this.#done.resolve(code);
  }
}
