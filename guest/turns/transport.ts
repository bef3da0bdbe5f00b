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

/**
 * A character device as a stream of connections: open it, yield it, and when the peer goes away (end of file or
 * an I/O error) close it and open it again. One file descriptor carries both directions through `node:fs`, whose
 * reads and writes run concurrently (a Deno `FsFile` serializes them, and a virtio-serial port may be opened only
 * once). On a virtio-serial port a write blocks until the host side is connected, so the agent's `Hello` waits for
 * the host; a tty (hvc, ttyS) must be in raw mode (`stty raw -echo`), which the image's init sets up.
 */
export function deviceConnections(path: string, logger: Logger, retryMs = 200): TurnsListener {
  let closed = false;
  let current: TurnsConnection | null = null;
  return {
    label: `device ${path}`,
    close: () => {
      closed = true;
      current?.close();
    },
    async *[Symbol.asyncIterator]() {
      let delay = retryMs;
      while (!closed) {
        let fd: number;
        try {
          fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_NOCTTY);
        } catch (e) {
          logger.warn({ event: "device_open_failed", path, err: String(e) }, "cannot open the device; retrying");
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 5_000);
          continue;
        }
        const ended = Promise.withResolvers<boolean>();
        current = _fdConnection(fd, `device ${path}`, ended);
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

function _fdConnection(fd: number, label: string, ended: PromiseWithResolvers<boolean>): TurnsConnection {
  let open = true;
  let gotData = false;
  const close = () => {
    if (!open) return;
    open = false;
    fs.close(fd, () => ended.resolve(gotData));
  };
  const readable = new ReadableStream<Uint8Array>({
    pull: (ctrl) =>
      new Promise<void>((resolve) => {
        const buf = new Uint8Array(16 * 1024);
        fs.read(fd, buf, 0, buf.length, null, (err, n) => {
          if (err || n === 0 || !open) {
            ctrl.close();
            close();
          } else {
            gotData = true;
            ctrl.enqueue(buf.subarray(0, n));
          }
          resolve();
        });
      }),
    cancel: () => close(),
  });
  const write = async (bytes: Uint8Array) => {
    let at = 0;
    while (at < bytes.length) {
      const n = await new Promise<number>((resolve, reject) =>
        fs.write(fd, bytes, at, bytes.length - at, null, (err, written) => err ? reject(err) : resolve(written))
      );
      at += n;
    }
  };
  return { label, readable, write, close };
}
