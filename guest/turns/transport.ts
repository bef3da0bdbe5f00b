/**
 * The channels `guest turns` serves on: TCP and unix-socket listeners, and a character device (virtio-serial
 * port, hvc or serial tty) that is one connection at a time. Deno has no AF_VSOCK, so vsock is not served
 * directly: a VM's host reaches the agent over TCP on the guest network or over a virtio-serial port instead.
 *
 * @module
 */
import fs from "node:fs";
import type { Logger } from "../../core/log/mod.ts";

/** One connection, whatever carries it. */
export interface TurnsConnection {
  /** For logs: `tcp 10.0.0.1:51000`, `unix /run/x.sock`, `device /dev/vport0p1`. */
  readonly label: string;
  readonly readable: ReadableStream<Uint8Array>;
  /** Writes all of `bytes`; calls are serialized by the caller. */
  write(bytes: Uint8Array): Promise<void>;
  close(): void;
}

/** A source of connections, one after another or concurrently. */
export interface TurnsListener extends AsyncIterable<TurnsConnection> {
  readonly label: string;
  close(): void;
}

/** Parses `HOST:PORT` (`[::1]:7000` for IPv6); throws RangeError on anything else. */
export function parseHostPort(s: string): { hostname: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):([0-9]{1,5})$/.exec(s);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port < 0 || port > 65535) throw new RangeError(`"${s}" is not HOST:PORT`);
  return { hostname: m[1] ?? m[2]!, port };
}

function _fromConn(conn: Deno.Conn, label: string): TurnsConnection {
  const writer = conn.writable.getWriter();
  return {
    label,
    readable: conn.readable,
    write: (b) => writer.write(b),
    close: () => {
      try {
        conn.close();
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
    },
  };
}

function _listener(l: Deno.Listener, label: (c: Deno.Conn) => string, name: string): TurnsListener {
  return {
    label: name,
    close: () => {
      try {
        l.close();
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
    },
    async *[Symbol.asyncIterator]() {
      try {
        for await (const c of l) yield _fromConn(c, label(c));
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource || e instanceof Deno.errors.Interrupted)) throw e;
      }
    },
  };
}

/** Listens on TCP. */
export function listenTcp(hostname: string, port: number): TurnsListener & { readonly port: number } {
  const l = Deno.listen({ hostname, port, transport: "tcp" });
  const addr = l.addr as Deno.NetAddr;
  const peer = (c: Deno.Conn) => {
    const a = c.remoteAddr as Deno.NetAddr;
    return `tcp ${a.hostname}:${a.port}`;
  };
  return Object.assign(_listener(l, peer, `tcp ${addr.hostname}:${addr.port}`), { port: addr.port });
}

/** Listens on a unix socket at `path` (a stale socket file there is replaced). */
export function listenUnix(path: string): TurnsListener {
  try {
    if (Deno.lstatSync(path).isSocket) Deno.removeSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  const l = Deno.listen({ path, transport: "unix" });
  return _listener(l, () => `unix ${path}`, `unix ${path}`);
}

/** Raw reads and writes of one open channel. */
interface _RawIo {
  /** Bytes read, or `null` / 0 at end of file. */
  read(buf: Uint8Array): Promise<number | null>;
  write(bytes: Uint8Array): Promise<number>;
  close(): void;
}

/**
 * A character device as a stream of connections: open it, yield it, and when the peer goes away (end of file or
 * an I/O error) close it and open it again. One file descriptor carries both directions through `node:fs`, whose
 * reads and writes run concurrently (a Deno `FsFile` serializes them, and a virtio-serial port may be opened only
 * once). On a virtio-serial port a write blocks until the host side is connected, so the agent's `Hello` waits for
 * the host. A tty (hvc, ttyS, pts) is put in raw mode. Deno 2 reserves most of `/dev` to `--allow-all`; under the
 * guest role's own flags use {@link stdioConnections} with the device as standard input and output.
 */
export function deviceConnections(path: string, logger: Logger, retryMs = 200): TurnsListener {
  return _reopening(`device ${path}`, () => _openDevice(path, logger), logger, retryMs);
}

/**
 * Standard input and output as a stream of connections, for a device the init hands over
 * (`bcd-guest turns --stdio <>/dev/vport0p1 >&0`): Deno opens nothing, so no `/dev` permission is needed. End of
 * file ends a connection (a virtio-serial port reads 0 while the host is away); the next one starts with `Hello`,
 * whose write waits for the host to come back. A host that closes and reconnects before the guest's pending read
 * wakes is invisible here (the port reads as connected again), so it gets no new `Hello`: a host that wants one
 * stays away until the agent has seen the end of the old connection.
 */
export function stdioConnections(logger: Logger, retryMs = 200): TurnsListener {
  const io: _RawIo = {
    read: (buf) => Deno.stdin.read(buf),
    write: (b) => Deno.stdout.write(b),
    close: () => {},
  };
  return _reopening("stdio", () => io, logger, retryMs);
}

function _reopening(label: string, open: () => _RawIo, logger: Logger, retryMs: number): TurnsListener {
  let closed = false;
  let current: TurnsConnection | null = null;
  return {
    label,
    close: () => {
      closed = true;
      current?.close();
    },
    async *[Symbol.asyncIterator]() {
      let delay = retryMs;
      while (!closed) {
        let io: _RawIo;
        try {
          io = open();
        } catch (e) {
          if (e instanceof Deno.errors.NotCapable) {
            // Permanent: Deno 2 reserves most of /dev to --allow-all. Stop this channel instead of spinning.
            logger.error(
              { event: "device_not_permitted", on: label, err: String(e) },
              "cannot open the device under these permissions; hand it over with --stdio instead",
            );
            return;
          }
          logger.warn({ event: "device_open_failed", on: label, err: String(e) }, "cannot open; retrying");
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 5_000);
          continue;
        }
        const ended = Promise.withResolvers<boolean>();
        current = _ioConnection(io, label, ended);
        yield current;
        const gotData = await ended.promise;
        current = null;
        if (!gotData) {
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 5_000);
        } else delay = retryMs;
      }
    },
  };
}

function _openDevice(path: string, logger: Logger): _RawIo {
  const fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_NOCTTY);
  _rawIfTty(path, logger);
  return {
    read: (buf) =>
      new Promise((resolve, reject) =>
        fs.read(fd, buf, 0, buf.length, null, (err, n) => (err ? reject(err) : resolve(n)))
      ),
    write: (b) =>
      new Promise((resolve, reject) =>
        fs.write(fd, b, 0, b.length, null, (err, n) => (err ? reject(err) : resolve(n)))
      ),
    close: () => fs.close(fd, () => {}),
  };
}

/** Puts a tty in raw mode through a second handle (termios belongs to the tty, so it outlives that handle). */
function _rawIfTty(path: string, logger: Logger): void {
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(path, { read: true, write: true });
  } catch (e) {
    // A virtio-serial port admits one opener: busy means it is no tty, which is fine.
    if (!(e instanceof Deno.errors.Busy)) logger.warn({ event: "device_raw_skipped", path, err: String(e) }, "no raw");
    return;
  }
  try {
    if (f.isTerminal()) f.setRaw(true);
  } finally {
    f.close();
  }
}

function _ioConnection(io: _RawIo, label: string, ended: PromiseWithResolvers<boolean>): TurnsConnection {
  let open = true;
  let gotData = false;
  const close = () => {
    if (!open) return;
    open = false;
    io.close();
    ended.resolve(gotData);
  };
  const readable = new ReadableStream<Uint8Array>({
    pull: async (ctrl) => {
      const buf = new Uint8Array(16 * 1024);
      let n: number | null;
      try {
        n = await io.read(buf);
      } catch (e) {
        if (!open) n = null;
        else throw e;
      }
      if (n === null || n === 0 || !open) {
        ctrl.close();
        close();
      } else {
        gotData = true;
        ctrl.enqueue(buf.subarray(0, n));
      }
    },
    cancel: () => close(),
  }, { highWaterMark: 0 }); // read only when asked: the first read must follow Hello, whose write waits for the host
  const write = async (bytes: Uint8Array) => {
    let at = 0;
    while (at < bytes.length) at += await io.write(bytes.subarray(at));
  };
  return { label, readable, write, close };
}
