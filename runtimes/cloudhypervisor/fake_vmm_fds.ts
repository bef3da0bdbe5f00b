/**
 * Test support: a unix listener for the fake VMM that receives file descriptors with each request, as
 * cloud-hypervisor's `micro_http` does (`recvmsg` with room for `SCM_RIGHTS`), so a test proves that a tap's fd
 * really crossed the socket. FFI (`libc.ts`); the received descriptors are the fake's until it closes them.
 *
 * @module
 */
import { encodeResponse, readMessage } from "./http1.ts";
import {
  AF_UNIX,
  check,
  libc,
  MAX_FDS,
  MSG_CMSG_CLOEXEC,
  msghdr,
  receivedFds,
  SOCK_CLOEXEC,
  SOCK_STREAM,
  sockaddrUn,
} from "./libc.ts";

/** A request as the listener hands it on (the fake VMM's `FakeRequest`, declared here so neither file imports the other). */
export interface FdRequest {
  readonly method: string;
  readonly path: string;
  readonly body: Uint8Array;
  readonly fds: readonly number[];
}

/** An answer: a status and a JSON body, or none. */
export interface FdResponse {
  readonly status: number;
  readonly body?: unknown;
}

/** A listening socket that hands each request and its fds to `handle`. */
export class FdListener {
  readonly #s: number;
  #closed = false;
  readonly #conns = new Set<number>();
  /** Every descriptor received, closed with the listener (the VMM's copies end with its process). */
  readonly #received: number[] = [];

  private constructor(
    s: number,
    readonly handle: (r: FdRequest) => FdResponse,
    readonly afterAnswer: () => boolean,
  ) {
    this.#s = s;
  }

  /** Listens on `path`; `afterAnswer` answers whether the VMM ended with that answer (then the listener closes). */
  static start(path: string, handle: (r: FdRequest) => FdResponse, afterAnswer: () => boolean): FdListener {
    const c = libc();
    const s = check("socket", c.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const addr = sockaddrUn(path);
    check(`bind ${path}`, c.bind(s, addr, addr.length));
    check("listen", c.listen(s, 16));
    const l = new FdListener(s, handle, afterAnswer);
    void l.#accept();
    return l;
  }

  /**
   * Accepts until the listener is shut down. The listening descriptor is closed here, once no `accept4` is pending:
   * closed earlier, its number could be reused by the next socket (a VMM restarted on the same path) and a pending
   * call would accept that socket's connection.
   */
  async #accept(): Promise<void> {
    const c = libc();
    try {
      while (!this.#closed) {
        const fd = await c.accept4(this.#s, null, null, SOCK_CLOEXEC);
        if (fd < 0) return;
        this.#serveConn(fd);
      }
    } finally {
      c.close(this.#s);
    }
  }

  /** Serves one connection; its descriptor is closed once no `recvmsg` on it is pending (same reason). */
  #serveConn(fd: number): void {
    this.#conns.add(fd);
    void this.#serve(fd).finally(() => {
      this.#conns.delete(fd);
      libc().close(fd);
    });
  }

  async #serve(fd: number): Promise<void> {
    const c = libc();
    let fds: number[] = [];
    let carried: Uint8Array = new Uint8Array(0);
    for (;;) {
      const got = await readMessage(
        async (b) => {
          const data = new Uint8Array(b.length);
          const m = msghdr(data, [], MAX_FDS);
          // MSG_CMSG_CLOEXEC: a process another test spawns meanwhile must not inherit a tap and keep it busy.
          const n = Number(await c.recvmsg(fd, m.hdr, MSG_CMSG_CLOEXEC));
          if (n <= 0) return null;
          const got = receivedFds(m);
          this.#received.push(...got);
          fds = [...fds, ...got];
          b.set(data.subarray(0, n));
          return n;
        },
        {},
        carried,
      ).catch(() => null);
      if (!got) return;
      carried = got.rest;
      const [method, path] = got.message.start;
      const r = this.handle({ method, path, body: got.message.body, fds });
      fds = [];
      const bytes = encodeResponse(
        r.status,
        r.body === undefined ? undefined : JSON.stringify(r.body),
      );
      for (let o = 0; o < bytes.length;) {
        const n = Number(c.write(fd, bytes.subarray(o), BigInt(bytes.length - o)));
        if (n <= 0) return;
        o += n;
      }
      if (this.afterAnswer()) return;
    }
  }

  /** Stops listening and hangs up every connection. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const c = libc();
    c.shutdown(this.#s, 2);
    for (const fd of this.#conns) c.shutdown(fd, 2);
    for (const fd of this.#received.splice(0)) c.close(fd);
  }
}
