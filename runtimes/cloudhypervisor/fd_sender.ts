/**
 * {@link ScmRightsSender}: sends one HTTP request to a VMM's API socket with file descriptors attached
 * (`SCM_RIGHTS`, in the `sendmsg` that carries the request's first bytes, as cloud-hypervisor's `micro_http` reads
 * them) and reads the answer with the same bounded codec as the node's client. Root's side only (FFI; see `libc.ts`
 * for why). The descriptors stay the caller's: the kernel gives the VMM its own copies.
 *
 * @module
 */
import { ChTransportError } from "./api_client.ts";
import type { FdSender } from "./ch_host.ts";
import { Http1Error, type Http1Message, readMessage } from "./http1.ts";
import {
  AF_UNIX,
  check,
  libc,
  msghdr,
  SO_RCVTIMEO,
  SO_SNDTIMEO,
  SOCK_CLOEXEC,
  SOCK_STREAM,
  sockaddrUn,
  SOL_SOCKET,
  timeval,
} from "./libc.ts";

/** The sender. */
export class ScmRightsSender implements FdSender {
  /** `timeoutMs`: the socket's send and receive timeouts, so a VMM that never answers frees the call. */
  constructor(readonly timeoutMs = 30_000, readonly maxBody = 1024 * 1024) {}

  async send(socket: string, request: Uint8Array, fds: readonly number[]): Promise<Http1Message> {
    const c = libc();
    const s = check("socket", c.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    try {
      const tv = timeval(this.timeoutMs);
      check("setsockopt SO_RCVTIMEO", c.setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, tv, tv.length));
      check("setsockopt SO_SNDTIMEO", c.setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, tv, tv.length));
      const addr = sockaddrUn(socket);
      if ((await c.connect(s, addr, addr.length)) < 0) {
        throw new ChTransportError("vmm-unreachable", `no VMM listens on ${socket}`);
      }
      const data = new Uint8Array(request);
      let off = 0;
      while (off < data.length) {
        const m = msghdr(data.subarray(off), off === 0 ? fds : []);
        const n = Number(await c.sendmsg(s, m.hdr, 0));
        if (n <= 0) throw new ChTransportError("vmm-unreachable", `the VMM on ${socket} took no bytes`);
        off += n;
      }
      let got: Awaited<ReturnType<typeof readMessage>>;
      try {
        got = await readMessage(async (b) => {
          const buf = new Uint8Array(b.length);
          const n = Number(await c.recv(s, buf, BigInt(buf.length), 0));
          if (n < 0) throw new ChTransportError("timeout", `the VMM on ${socket} did not answer in time`);
          if (n === 0) return null;
          b.set(buf.subarray(0, n));
          return n;
        }, { maxBody: this.maxBody });
      } catch (e) {
        if (e instanceof Http1Error) {
          throw new ChTransportError("bad-response", `the VMM on ${socket}: ${e.message}`, { cause: e });
        }
        throw e;
      }
      if (!got) throw new ChTransportError("bad-response", `the VMM on ${socket} closed without answering`);
      return got.message;
    } finally {
      c.close(s);
    }
  }
}
