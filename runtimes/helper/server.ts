/**
 * The root helper's server: it listens on a unix stream socket (mode 0660, group `[helper] node_group`, in a 0750
 * directory of its own), reads NDJSON requests line by line under {@link MAX_REQUEST_LINE}, refuses an op outside the
 * role it serves (`not-allowed`), checks the rest with the protocol's default-deny table, runs each and answers. Every
 * request is logged with its arguments; a refusal or failure is logged with its code (at most
 * {@link REFUSAL_LOG_BURST} refusals per connection; the rest are counted and logged once when it closes).
 *
 * **No peer on the socket can make the helper stop serving the node.** What each connection may cost is bounded:
 *
 * | bound | value | what happens past it |
 * | ----- | ----- | -------------------- |
 * | a partial line (copied, never a view on a read buffer) | {@link MAX_REQUEST_LINE} | `line-too-long`, closed |
 * | answer bytes the peer leaves unread | {@link MAX_UNSENT_ANSWER_BYTES} | its requests are no longer read until it reads |
 * | unread answers not drained | {@link HelperServerOptions.writeStallMs} (default {@link WRITE_STALL_MS}) | closed, its queue dropped |
 * | a line begun and not finished | {@link HelperServerOptions.partialLineMs} (default {@link PARTIAL_LINE_DEADLINE_MS}) | `closing`, closed |
 * | no request, nothing running or unsent | {@link HelperServerOptions.idleMs} (default {@link IDLE_TIMEOUT_MS}) | `closing`, closed |
 * | requests running on one connection | {@link HelperServerOptions.maxInFlight} (default {@link MAX_IN_FLIGHT}) | `busy` |
 * | connections | {@link HelperServerOptions.maxConnections} (default {@link MAX_CONNECTIONS}) | the least recently active peer with nothing running is evicted (`closing`); `busy` only when every peer has a request running |
 *
 * A peer whose write fails (it went away with answers queued) has its whole queue dropped at once; later answers to it
 * are not tried. A peer's EOF (a half-close) stops the reading, not the writing: every request read is answered.
 *
 * **How the node's connection is told apart.** It is not: unix sockets carry no identity the helper could trust
 * beyond the socket's group, which the node and anything acting as the node share. Instead the helper serves whoever
 * is active and evicts whoever is not. The node keeps one connection and sends a request on every pass; an attacker
 * holding connections open, sending a byte at a time or not reading its answers has nothing running, so it is the
 * least recently active peer and is evicted when the node (re)connects. The node's own connection, if it was evicted
 * while idle, is opened again on its next call, which evicts in turn; a request the node had sent when its
 * connection was closed was never read (the `closing` notice comes after every answer), so the node sends it again.
 * Chosen over a reserved slot (which the first connection after a restart could take) and over fair scheduling of
 * ops (ops are few and short; what starved the node was connections and queues, not CPU).
 *
 * @module
 */
import {
  boundedLines,
  DEFAULT_HELPER_ROLE,
  encodeError,
  encodeResult,
  HelperError,
  type HelperOp,
  type HelperRequest,
  type LineReaderState,
  loggedArgs,
  MAX_REQUEST_LINE,
  opsOfRole,
} from "../../core/helper/mod.ts";
import { decodeRequest, RequestRefused } from "../../core/helper/request.ts";
import type { KindRole } from "../../core/commands/kinds.ts";
import { type Clock, realClock, repeat } from "../../core/clock.ts";
import type { Logger } from "../../core/log/mod.ts";
import type { HelperBackends } from "./backends.ts";
import { runOp } from "./dispatch.ts";
import { Mutex } from "./mutex.ts";
import { MAX_UNSENT_ANSWER_BYTES, Peer, quietConnError } from "./peer.ts";
import { prepareSocketDir } from "./socket_dir.ts";
import { MAX_PLUGIN_SESSIONS, PluginRelay } from "./plugin_relay.ts";
import { PluginError } from "../../core/plugins/mod.ts";

/** Connections served at once (the node keeps one per process; the rest is room for restarts and tools). */
export const MAX_CONNECTIONS = 16;
/** Requests running at once on one connection. */
export const MAX_IN_FLIGHT = 16;
/** A connection with no request read, nothing running and nothing unsent for this long is closed. */
export const IDLE_TIMEOUT_MS = 120_000;
/** A line begun must end within this (a request line is at most 1 MiB; a node sends it in one write). */
export const PARTIAL_LINE_DEADLINE_MS = 10_000;
/** Unsent answers that make no progress for this long: the peer does not read; closed, its queue dropped. */
export const WRITE_STALL_MS = 30_000;
/** Refusals logged per connection; the rest are counted and logged once at its close. */
export const REFUSAL_LOG_BURST = 10;

/** Options of {@link HelperServer}. */
export interface HelperServerOptions {
  readonly log: Logger;
  /** Requests running at once on one connection (default {@link MAX_IN_FLIGHT}). */
  readonly maxInFlight?: number;
  /** Connections served at once (default {@link MAX_CONNECTIONS}). */
  readonly maxConnections?: number;
  /** The agent role served (default `node`): other ops are refused `not-allowed` (`core/helper/roles.ts`). */
  readonly role?: KindRole;
  /** Idle timeout in ms (default {@link IDLE_TIMEOUT_MS}). */
  readonly idleMs?: number;
  /** Partial-line deadline in ms (default {@link PARTIAL_LINE_DEADLINE_MS}). */
  readonly partialLineMs?: number;
  /** Write-stall timeout in ms (default {@link WRITE_STALL_MS}). */
  readonly writeStallMs?: number;
  /** The clock of those deadlines (default the real clock); the watch runs on it every quarter of the shortest. */
  readonly clock?: Pick<Clock, "monotonic" | "setTimer">;
}

/** How the socket is made. */
export interface ListenOptions {
  /** Group owning the socket and its directory (the node's group); unchanged when absent. */
  readonly gid?: number;
  /** Socket mode (default 0660). */
  readonly socketMode?: number;
  /** Directory mode (default 0750). */
  readonly dirMode?: number;
}

/** A listening helper. */
export interface HelperListener {
  readonly path: string;
  /** Resolves when the listener has stopped. */
  readonly done: Promise<void>;
  /** Stops accepting, ends every connection and removes the socket file. */
  close(): Promise<void>;
}

/** Serves the protocol over connections. */
export class HelperServer {
  readonly #b: HelperBackends;
  readonly #log: Logger;
  readonly #maxInFlight: number;
  readonly #maxConns: number;
  readonly #role: KindRole;
  readonly #ops: ReadonlySet<HelperOp>;
  readonly #idleMs: number;
  readonly #partialMs: number;
  readonly #stallMs: number;
  readonly #clock: Pick<Clock, "monotonic" | "setTimer">;
  readonly #writes = new Mutex();
  readonly #peers = new Set<Peer>();
  readonly #relays = new Set<PluginRelay>();
  #nextConn = 1;

  constructor(backends: HelperBackends, opts: HelperServerOptions) {
    this.#b = backends;
    this.#log = opts.log;
    this.#maxInFlight = opts.maxInFlight ?? MAX_IN_FLIGHT;
    this.#maxConns = opts.maxConnections ?? MAX_CONNECTIONS;
    this.#role = opts.role ?? DEFAULT_HELPER_ROLE;
    this.#ops = opsOfRole(this.#role);
    this.#idleMs = opts.idleMs ?? IDLE_TIMEOUT_MS;
    this.#partialMs = opts.partialLineMs ?? PARTIAL_LINE_DEADLINE_MS;
    this.#stallMs = opts.writeStallMs ?? WRITE_STALL_MS;
    this.#clock = opts.clock ?? realClock;
  }

  /** The agent role served. */
  get role(): KindRole {
    return this.#role;
  }

  /** Connections being served. */
  get connections(): number {
    return this.#peers.size;
  }

  /** Runs one checked request (the dispatch the socket path uses; tests call it directly too), of the served role. */
  run(req: HelperRequest): Promise<unknown> {
    if (!this.#ops.has(req.op)) {
      return Promise.reject(new HelperError("not-allowed", `${req.op} is not an op of the role this helper serves`));
    }
    return runOp(this.#b, req, this.#writes);
  }

  /**
   * `plugin.attach`: starts the plugin and makes this connection its relay (`./plugin_relay.ts`); only as the
   * connection's first request, and at most {@link MAX_PLUGIN_SESSIONS} at once. A plugin that cannot be had is an
   * answer (`refused`, the contract's reason), and the connection stays a plain one.
   */
  async #attach(peer: Peer, id: number, name: string, first: boolean): Promise<PluginRelay | undefined> {
    const refuse = (e: HelperError) => {
      this.#refused(peer, { id, code: e.code, err: e.detail }, "helper: refused");
      peer.send(encodeError(id, e));
      return undefined;
    };
    if (!first) {
      return refuse(new HelperError("invalid-argument", "plugin.attach: only as a connection's first request"));
    }
    if (this.#relays.size >= MAX_PLUGIN_SESSIONS) {
      return refuse(new HelperError("over-limit", `plugin.attach: ${MAX_PLUGIN_SESSIONS} plugins run already`));
    }
    let ch, version;
    try {
      const m = await this.#b.plugins.manifest(name);
      version = m.version;
      ch = await this.#b.plugins.launch(m);
    } catch (e) {
      if (!(e instanceof PluginError)) throw e;
      this.#log.warn({ conn: peer.id, plugin: name, reason: e.reason, err: e.message }, "helper: plugin not started");
      peer.send(encodeResult(id, { refused: { reason: e.reason, message: e.message } }));
      return undefined;
    }
    peer.send(encodeResult(id, { attached: { name, version } }));
    const relay = new PluginRelay(ch, peer, name, this.#log);
    this.#relays.add(relay);
    peer.running++; // an attached connection is never idle nor evicted while its plugin runs
    void relay.done.finally(() => {
      this.#relays.delete(relay);
      peer.running--;
    });
    this.#log.info({ conn: peer.id, plugin: name, version }, "helper: plugin attached");
    return relay;
  }

  /** The peer to evict for a newcomer: nothing running, not ending, least recently active. */
  #victim(): Peer | undefined {
    let v: Peer | undefined;
    for (const p of this.#peers) {
      if (p.running > 0 || p.ending) continue;
      if (v === undefined || p.lastActivity < v.lastActivity) v = p;
    }
    return v;
  }

  /** Ends `p` gracefully: stop reading; `closing` is sent once what it was owed is answered (see serve's finally). */
  #end(p: Peer, why: string): void {
    if (p.ending) return;
    p.ending = true;
    this.#log.info({ conn: p.id, why }, "helper: ending connection");
    if (p.unsent > 0) {
      p.close(); // it has not read what it was sent: its queue is dropped, nothing more is owed
      return;
    }
    p.closingWhy = why;
    p.stopReading();
  }

  #refused(p: Peer, fields: Record<string, unknown>, msg: string): void {
    if (p.refusalsLogged < REFUSAL_LOG_BURST) {
      p.refusalsLogged++;
      this.#log.warn({ conn: p.id, ...fields }, msg);
    } else {
      p.refusalsSuppressed++;
    }
  }

  #watch(p: Peer, reader: LineReaderState & { lines: number }, mark: { since?: number; lines: number }): void {
    if (p.dead) return;
    const now = this.#clock.monotonic();
    if (p.unsent > 0 && now - p.lastWrite > this.#stallMs) {
      this.#log.warn(
        { conn: p.id, unsent: p.unsent, ms: this.#stallMs },
        "helper: peer does not read its answers; closing",
      );
      p.ending = true;
      p.close();
      return;
    }
    if (p.ending) return;
    if (reader.partialBytes > 0 && p.unsent <= MAX_UNSENT_ANSWER_BYTES) {
      if (mark.since === undefined || mark.lines !== reader.lines) {
        mark.since = now;
        mark.lines = reader.lines;
      } else if (now - mark.since > this.#partialMs) {
        this.#end(p, `a line begun was not finished in ${this.#partialMs} ms`);
        return;
      }
    } else {
      mark.since = undefined;
    }
    if (p.running === 0 && p.unsent === 0 && reader.partialBytes === 0 && now - p.lastActivity > this.#idleMs) {
      this.#end(p, `idle for ${this.#idleMs} ms`);
    }
  }

  /** Serves one connection until the peer closes it, sends a line past the cap, idles or is evicted; closes it. */
  async serve(conn: Deno.Conn): Promise<void> {
    const cid = this.#nextConn++;
    const peer = new Peer(cid, conn, this.#clock, (e) => {
      this.#log.error({ conn: cid, err: String(e) }, "helper: connection I/O failed");
    });
    if (this.#peers.size >= this.#maxConns) {
      const v = this.#victim();
      if (v === undefined) {
        this.#log.warn({ conn: cid, max: this.#maxConns }, "helper: connection refused, every peer has work running");
        peer.send(encodeError(null, new HelperError("busy", `more than ${this.#maxConns} connections, all busy`)));
        await peer.drained();
        peer.close();
        return;
      }
      this.#end(v, `evicted: ${this.#maxConns} connections, and conn ${cid} is newer than this least active one`);
    }
    this.#peers.add(peer);
    this.#log.info({ conn: cid }, "helper: connection");
    const reader: LineReaderState & { lines: number } = { partialBytes: 0, lines: 0 };
    const mark: { since?: number; lines: number } = { lines: 0 };
    const tick = Math.max(10, Math.floor(Math.min(this.#idleMs, this.#partialMs, this.#stallMs) / 4));
    const watch = repeat(this.#clock, tick, () => this.#watch(peer, reader, mark));
    const running = new Set<Promise<void>>();
    let relay: PluginRelay | undefined;
    try {
      for await (const ev of boundedLines(peer.readable(), MAX_REQUEST_LINE, reader)) {
        reader.lines++;
        if (peer.unsent > MAX_UNSENT_ANSWER_BYTES) await peer.drained(MAX_UNSENT_ANSWER_BYTES / 2);
        if (peer.dead || peer.ending) break;
        if (relay) {
          // An attached connection carries the plugin's frames, no more requests.
          if (ev.kind !== "line") {
            relay.kill("plugin-protocol", `the agent sent a line that is ${ev.kind}`);
            break;
          }
          await relay.toPlugin(ev.line);
          continue;
        }
        if (ev.kind === "too-long") {
          this.#refused(peer, { max: ev.max }, "helper: request line too long; closing");
          peer.send(encodeError(null, new HelperError("line-too-long", `request line passes ${ev.max} bytes`)));
          break;
        }
        if (ev.kind === "not-utf8") {
          this.#refused(peer, { code: "malformed" }, "helper: request line is not UTF-8");
          peer.send(encodeError(null, new HelperError("malformed", "request line is not UTF-8")));
          continue;
        }
        let req: HelperRequest;
        try {
          req = decodeRequest(ev.line, this.#ops);
        } catch (e) {
          if (!(e instanceof RequestRefused)) throw e;
          this.#refused(peer, { id: e.id, code: e.error.code, err: e.error.detail }, "helper: refused");
          peer.send(encodeError(e.id, e.error));
          continue;
        }
        peer.lastActivity = this.#clock.monotonic();
        if (peer.running >= this.#maxInFlight) {
          this.#refused(peer, { id: req.id, op: req.op, code: "busy" }, "helper: busy");
          peer.send(encodeError(req.id, new HelperError("busy", `${req.op}: ${this.#maxInFlight} requests in flight`)));
          continue;
        }
        this.#log.info({ conn: cid, id: req.id, op: req.op, args: loggedArgs(req) }, "helper: op");
        if (req.op === "plugin.attach") {
          relay = await this.#attach(peer, req.id, req.args.name, reader.lines === 1);
          continue;
        }
        peer.running++;
        const t = this.run(req).then(
          (result) => {
            this.#log.debug({ conn: cid, id: req.id, op: req.op }, "helper: op done");
            peer.send(encodeResult(req.id, result));
          },
          (e: unknown) => {
            const err = e instanceof HelperError ? e : new HelperError("failed", `${req.op}: ${String(e)}`);
            this.#log.warn({ conn: cid, id: req.id, op: req.op, code: err.code, err: err.detail }, "helper: op failed");
            peer.send(encodeError(req.id, err));
          },
        ).finally(() => {
          peer.running--;
          peer.lastActivity = this.#clock.monotonic();
          running.delete(t);
        });
        running.add(t);
      }
    } catch (e) {
      if (!quietConnError(e)) this.#log.error({ conn: cid, err: String(e) }, "helper: connection failed");
    } finally {
      if (relay) {
        relay.kill("plugin-crashed", "the agent closed the plugin's connection");
        await relay.done;
      }
      // The peer's EOF ends the reading only: what it asked is still answered, then the connection closes.
      await Promise.allSettled([...running]);
      if (peer.closingWhy !== undefined) peer.sendClosing(peer.closingWhy);
      await peer.drained();
      watch.cancel();
      this.#peers.delete(peer);
      peer.close();
      if (peer.refusalsSuppressed > 0) {
        this.#log.warn(
          { conn: cid, logged: peer.refusalsLogged, suppressed: peer.refusalsSuppressed },
          "helper: refusals past the log burst were not logged",
        );
      }
      this.#log.info({ conn: cid }, "helper: connection closed");
    }
  }

  /**
   * Listens on `path`: makes its directory its own (mode 0750, the node's group; `./socket_dir.ts` refuses one that is
   * not the helper's), refuses when another helper answers there or the path is something other than a socket,
   * replaces a stale socket, and sets the socket's mode and group.
   */
  async listen(path: string, opts: ListenOptions = {}): Promise<HelperListener> {
    const dir = path.slice(0, path.lastIndexOf("/")) || "/";
    await prepareSocketDir(dir, { mode: opts.dirMode ?? 0o750, ...(opts.gid !== undefined ? { gid: opts.gid } : {}) });
    await _clearStale(path);
    const listener = Deno.listen({ transport: "unix", path });
    await Deno.chmod(path, opts.socketMode ?? 0o660);
    if (opts.gid !== undefined) await Deno.chown(path, null, opts.gid);
    this.#log.info(
      { socket: path, mode: (opts.socketMode ?? 0o660).toString(8), gid: opts.gid, serves: this.#role },
      "helper: listening",
    );
    const serving = new Set<Promise<void>>();
    const done = (async () => {
      try {
        for await (const conn of listener) {
          const p = this.serve(conn).finally(() => serving.delete(p));
          serving.add(p);
        }
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
      await Promise.allSettled([...serving]);
    })();
    let closed = false;
    return {
      path,
      done,
      close: async () => {
        if (closed) return await done;
        closed = true;
        try {
          listener.close();
        } catch (e) {
          if (!(e instanceof Deno.errors.BadResource)) throw e;
        }
        for (const p of this.#peers) p.close();
        await done;
        await Deno.remove(path).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
        this.#log.info({ socket: path }, "helper: stopped");
      },
    };
  }
}

/** Removes a socket no helper answers on; refuses a live one or a path that is not a socket. */
async function _clearStale(path: string): Promise<void> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.lstat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  if (!st.isSocket) throw new Error(`${path} exists and is not a socket; not replacing it`);
  try {
    const c = await Deno.connect({ transport: "unix", path });
    c.close();
    throw new Error(`another helper answers on ${path}`);
  } catch (e) {
    if (!(e instanceof Deno.errors.ConnectionRefused || e instanceof Deno.errors.NotFound)) throw e;
  }
  await Deno.remove(path);
}
