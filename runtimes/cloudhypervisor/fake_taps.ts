/**
 * Fakes of root's taps and of the `SCM_RIGHTS` sender, for the runtime's tests on machines without a netns of their
 * own: {@link FakeTaps} keeps interfaces in a map and hands out descriptor numbers it tracks (open ones are counted,
 * so a test sees every fd closed again); {@link FakeFdSender} delivers a request and its descriptors straight to the
 * {@link FakeVmm} listening on the socket (found through the fake systemd). The real pair (`ip tuntap` in a network
 * namespace, `sendmsg` through FFI) has its own tests.
 *
 * @module
 */
import type { FdSender, TapPort } from "./ch_host.ts";
import type { FakeSystemd } from "./fake_systemd.ts";
import { encodeResponse, type Http1Message, readMessage } from "./http1.ts";

/** Interfaces by name. */
export class FakeTaps implements TapPort {
  readonly links = new Map<string, { kind: "tap" | "other"; bridge?: string; owner?: number }>();
  readonly open_ = new Map<number, string>();
  #next = 100;

  ensure(name: string, bridge: string, owner: number): Promise<void> {
    this.links.set(name, { kind: "tap", bridge, owner });
    return Promise.resolve();
  }
  kind(name: string): Promise<"tap" | "other" | "none"> {
    return Promise.resolve(this.links.get(name)?.kind ?? "none");
  }
  remove(name: string): Promise<void> {
    this.links.delete(name);
    return Promise.resolve();
  }
  open(name: string): Promise<number> {
    if (this.links.get(name)?.kind !== "tap") return Promise.reject(new Error(`no tap ${name}`));
    const fd = this.#next++;
    this.open_.set(fd, name);
    return Promise.resolve(fd);
  }
  close(fd: number): void {
    this.open_.delete(fd);
  }
}

/** Delivers to the fake VMM on the socket, with the fds. */
export class FakeFdSender implements FdSender {
  constructor(readonly systemd: FakeSystemd) {}

  async send(socket: string, request: Uint8Array, fds: readonly number[]): Promise<Http1Message> {
    const vmm = [...this.systemd.units.values()].find((u) => u.vmm.socket === socket && u.vmm.alive)?.vmm;
    if (!vmm) throw new Deno.errors.ConnectionRefused(`no VMM listens on ${socket}`);
    let off = 0;
    const got = await readMessage((b) => {
      const n = Math.min(b.length, request.length - off);
      if (n === 0) return Promise.resolve(null);
      b.set(request.subarray(off, off + n));
      off += n;
      return Promise.resolve(n);
    });
    const [method, path] = got!.message.start;
    const r = vmm.handle({ method, path, body: got!.message.body, fds });
    const bytes = encodeResponse(r.status, r.body === undefined ? undefined : JSON.stringify(r.body));
    let at = 0;
    return (await readMessage((b) => {
      const n = Math.min(b.length, bytes.length - at);
      if (n === 0) return Promise.resolve(null);
      b.set(bytes.subarray(at, at + n));
      at += n;
      return Promise.resolve(n);
    }))!.message;
  }
}
