/**
 * The root helper's server: it listens on a unix stream socket (mode 0660, group `[helper] node_group`, in a 0750
 * directory), reads NDJSON requests line by line under {@link MAX_REQUEST_LINE}, refuses an op outside the role it
 * serves (`not-allowed`), checks the rest with the protocol's default-deny table, runs each and answers. Every request is logged with its arguments; a refusal or failure is
 * logged with its code. A connection may keep {@link HelperServerOptions.maxInFlight} requests running at once
 * (more are answered `busy`); the node keeps one connection per process, and at most
 * {@link HelperServerOptions.maxConnections} are served at a time.
 *
 * @module
 */
import {
  boundedLines,
  decodeRequest,
  DEFAULT_HELPER_ROLE,
  encodeError,
  encodeResult,
  HelperError,
  type HelperOp,
  type HelperRequest,
  loggedArgs,
  MAX_REQUEST_LINE,
  opsOfRole,
  RequestRefused,
} from "../../core/helper/mod.ts";
import type { KindRole } from "../../core/commands/kinds.ts";
import type { Logger } from "../../core/log/mod.ts";
import type { HelperBackends } from "./backends.ts";
import { Mutex, runOp } from "./dispatch.ts";

/** Options of {@link HelperServer}. */
export interface HelperServerOptions {
  readonly log: Logger;
  /** Requests running at once on one connection (default 16). */
  readonly maxInFlight?: number;
  /** Connections served at once (default 4: one per node process, and room for a restart's overlap). */
  readonly maxConnections?: number;
  /** The agent role served (default `node`): other ops are refused `not-allowed` (`core/helper/roles.ts`). */
  readonly role?: KindRole;
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

const _enc = new TextEncoder();

function _quiet(e: unknown): boolean {
  return e instanceof Deno.errors.BrokenPipe || e instanceof Deno.errors.ConnectionReset ||
    e instanceof Deno.errors.BadResource || e instanceof Deno.errors.NotConnected;
}

/** Serves the protocol over connections. */
export class HelperServer {
  readonly #b: HelperBackends;
  readonly #log: Logger;
  readonly #maxInFlight: number;
  readonly #maxConns: number;
  readonly #role: KindRole;
  readonly #ops: ReadonlySet<HelperOp>;
  readonly #writes = new Mutex();
  readonly #conns = new Set<Deno.Conn>();
  #nextConn = 1;

  constructor(backends: HelperBackends, opts: HelperServerOptions) {
    this.#b = backends;
    this.#log = opts.log;
    this.#maxInFlight = opts.maxInFlight ?? 16;
    this.#maxConns = opts.maxConnections ?? 4;
    this.#role = opts.role ?? DEFAULT_HELPER_ROLE;
    this.#ops = opsOfRole(this.#role);
  }

  /** The agent role served. */
  get role(): KindRole {
    return this.#role;
  }

  /** Connections being served. */
  get connections(): number {
    return this.#conns.size;
  }

  /** Runs one checked request (the dispatch the socket path uses; tests call it directly too), of the served role. */
  run(req: HelperRequest): Promise<unknown> {
    if (!this.#ops.has(req.op)) {
      return Promise.reject(new HelperError("not-allowed", `${req.op} is not an op of the role this helper serves`));
    }
    return runOp(this.#b, req, this.#writes);
  }

  /** Serves one connection until the peer closes it or sends a line past the cap; closes it. */
  async serve(conn: Deno.Conn): Promise<void> {
    const cid = this.#nextConn++;
    if (this.#conns.size >= this.#maxConns) {
      this.#log.warn({ conn: cid, max: this.#maxConns }, "helper: connection refused, too many");
      await _writeAll(conn, encodeError(null, new HelperError("busy", `more than ${this.#maxConns} connections`)))
        .catch(() => undefined);
      _close(conn);
      return;
    }
    this.#conns.add(conn);
    this.#log.info({ conn: cid }, "helper: connection");
    let out: Promise<void> = Promise.resolve();
    const send = (line: string) => {
      out = out.then(() => _writeAll(conn, line)).catch((e) => {
        if (!_quiet(e)) this.#log.error({ conn: cid, err: String(e) }, "helper: answer not written");
      });
    };
    const running = new Set<Promise<void>>();
    try {
      for await (const ev of boundedLines(conn.readable, MAX_REQUEST_LINE)) {
        if (ev.kind === "too-long") {
          this.#log.warn({ conn: cid, max: ev.max }, "helper: request line too long; closing");
          send(encodeError(null, new HelperError("line-too-long", `request line passes ${ev.max} bytes`)));
          break;
        }
        if (ev.kind === "not-utf8") {
          this.#log.warn({ conn: cid }, "helper: request line is not UTF-8");
          send(encodeError(null, new HelperError("malformed", "request line is not UTF-8")));
          continue;
        }
        let req: HelperRequest;
        try {
          req = decodeRequest(ev.line, this.#ops);
        } catch (e) {
          if (!(e instanceof RequestRefused)) throw e;
          this.#log.warn({ conn: cid, id: e.id, code: e.error.code, err: e.error.detail }, "helper: refused");
          send(encodeError(e.id, e.error));
          continue;
        }
        if (running.size >= this.#maxInFlight) {
          this.#log.warn({ conn: cid, id: req.id, op: req.op }, "helper: busy");
          send(encodeError(req.id, new HelperError("busy", `${req.op}: ${this.#maxInFlight} requests in flight`)));
          continue;
        }
        this.#log.info({ conn: cid, id: req.id, op: req.op, args: loggedArgs(req) }, "helper: op");
        const t = this.run(req).then(
          (result) => {
            this.#log.debug({ conn: cid, id: req.id, op: req.op }, "helper: op done");
            send(encodeResult(req.id, result));
          },
          (e: unknown) => {
            const err = e instanceof HelperError ? e : new HelperError("failed", `${req.op}: ${String(e)}`);
            this.#log.warn({ conn: cid, id: req.id, op: req.op, code: err.code, err: err.detail }, "helper: op failed");
            send(encodeError(req.id, err));
          },
        ).finally(() => running.delete(t));
        running.add(t);
      }
    } catch (e) {
      if (!_quiet(e)) this.#log.error({ conn: cid, err: String(e) }, "helper: connection failed");
    } finally {
      await Promise.allSettled([...running]);
      await out;
      this.#conns.delete(conn);
      _close(conn);
      this.#log.info({ conn: cid }, "helper: connection closed");
    }
  }

  /**
   * Listens on `path`: makes its directory (mode 0750, the node's group), refuses when another helper answers there
   * or the path is something other than a socket, replaces a stale socket, and sets the socket's mode and group.
   */
  async listen(path: string, opts: ListenOptions = {}): Promise<HelperListener> {
    const dir = path.slice(0, path.lastIndexOf("/")) || "/";
    await Deno.mkdir(dir, { recursive: true, mode: opts.dirMode ?? 0o750 });
    await Deno.chmod(dir, opts.dirMode ?? 0o750);
    if (opts.gid !== undefined) await Deno.chown(dir, null, opts.gid);
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
        for (const c of this.#conns) _close(c);
        await done;
        await Deno.remove(path).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
        this.#log.info({ socket: path }, "helper: stopped");
      },
    };
  }
}

async function _writeAll(conn: Deno.Conn, line: string): Promise<void> {
  const bytes = _enc.encode(line);
  let n = 0;
  while (n < bytes.length) n += await conn.write(bytes.subarray(n));
}

function _close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
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
