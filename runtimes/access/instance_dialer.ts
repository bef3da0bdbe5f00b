/**
 * The tunnel's dial on a host (000 §Instances, `ssh_from_host_only`): the instance's address on tcp/22, from the
 * host's own address on the instance's bridge — the only source the `ssh_from_host_only` rules let in.
 *
 * The instance is found in the spec the node holds; its address is the first IPAM address of a NIC (IPv4 first) whose
 * bridge carries a host address in the same subnet, and the connection is bound to that host address (`node:net`'s
 * `localAddress`). Refusals, each a {@link TunnelDialError}: `instance-unknown` (no such instance in the spec, or
 * deleted), `address-ambiguous` (another instance claims the address: a tunnel names an instance by its address and
 * trusts only one no two instances claim), `no-host-address` (no NIC whose bridge has a host address in its subnet),
 * `dial-failed` (the connection failed or timed out).
 *
 * @module
 */
import type { Socket } from "node:net";
import { type TunnelConn, type TunnelDialer, TunnelDialError } from "../../core/access/tunnels.ts";

/** A NIC of an instance, as the spec says it. */
export interface DialNic {
  readonly bridge?: string | null;
  readonly ipam_addresses?: readonly string[] | null;
}

/** An instance of the spec, as far as the dial needs it. */
export interface DialInstance {
  readonly id?: string | null;
  /** `DELETED` is 4 in `InstanceSpec.State`. */
  readonly state?: number | null;
  readonly nics?: readonly DialNic[] | null;
}

/** An interface address of the host (`Deno.networkInterfaces()`' shape). */
export interface HostAddress {
  readonly name: string;
  readonly family: "IPv4" | "IPv6";
  readonly address: string;
}

/** Options of {@link InstanceDialer}. */
export interface InstanceDialerOptions {
  /** The instances of the spec held now. */
  instances(): readonly DialInstance[];
  /** The host's interface addresses (default `Deno.networkInterfaces()`). */
  hostAddresses?(): readonly HostAddress[];
  /** How long a dial may take (default 10 s). */
  readonly timeoutMs?: number;
}

const _DELETED = 4;

function _v4(a: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (!m) return undefined;
  const o = m.slice(1).map(Number);
  return o.some((x) => x > 255) ? undefined : ((o[0]! << 24) >>> 0) + (o[1]! << 16) + (o[2]! << 8) + o[3]!;
}

function _v6(a: string): bigint | undefined {
  const s = a.split("%")[0]!;
  if (!/^[0-9a-fA-F:]+$/.test(s) || s.split("::").length > 2) return undefined;
  const [head, tail] = s.includes("::") ? s.split("::") as [string, string] : [s, undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const groups = [...h, ...new Array(fill).fill("0"), ...t];
  if (groups.length !== 8 || groups.some((g) => g.length === 0 || g.length > 4)) return undefined;
  return groups.reduce((n, g) => (n << 16n) + BigInt(parseInt(g, 16)), 0n);
}

/** Whether `a` is in `addr/prefix`'s subnet. */
export function sameSubnet(cidr: string, a: string): boolean {
  const [addr, p] = cidr.split("/");
  const prefix = Number(p);
  if (addr === undefined || !Number.isInteger(prefix)) return false;
  const x4 = _v4(addr);
  const y4 = _v4(a);
  if (x4 !== undefined && y4 !== undefined && prefix >= 0 && prefix <= 32) {
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    return ((x4 & mask) >>> 0) === ((y4 & mask) >>> 0);
  }
  const x6 = _v6(addr);
  const y6 = _v6(a);
  if (x6 === undefined || y6 === undefined || prefix < 0 || prefix > 128) return false;
  const shift = BigInt(128 - prefix);
  return (x6 >> shift) === (y6 >> shift);
}

function _family(addr: string): "IPv4" | "IPv6" {
  return _v4(addr) !== undefined ? "IPv4" : "IPv6";
}

/** The dial. */
export class InstanceDialer implements TunnelDialer {
  readonly #o: InstanceDialerOptions;
  constructor(o: InstanceDialerOptions) {
    this.#o = o;
  }

  /** The instance's address and the host address to dial it from. */
  route(instance: string): { readonly address: string; readonly from: string } {
    const all = this.#o.instances().filter((i) => i.state !== _DELETED);
    const inst = all.find((i) => i.id === instance);
    if (!inst) {
      throw new TunnelDialError("instance-unknown", `no instance ${JSON.stringify(instance)} in the spec held`);
    }
    const host = this.#o.hostAddresses?.() ?? Deno.networkInterfaces();
    const candidates = (inst.nics ?? []).flatMap((n) =>
      (n.ipam_addresses ?? []).map((cidr) => ({ cidr, bridge: n.bridge ?? "", address: cidr.split("/")[0]! }))
    ).sort((a, b) => (_family(a.address) === "IPv4" ? 0 : 1) - (_family(b.address) === "IPv4" ? 0 : 1));
    for (const c of candidates) {
      const claimed = all.some((o) =>
        o !== inst && (o.nics ?? []).some((n) => (n.ipam_addresses ?? []).some((x) => x.split("/")[0] === c.address))
      );
      if (claimed) {
        throw new TunnelDialError(
          "address-ambiguous",
          `address ${c.address} of ${instance} is claimed by another instance`,
        );
      }
      const from = host.find((h) =>
        h.name === c.bridge && h.family === _family(c.address) && h.address !== c.address &&
        sameSubnet(c.cidr, h.address)
      );
      if (from) return { address: c.address, from: from.address };
    }
    throw new TunnelDialError(
      "no-host-address",
      `no NIC of ${instance} sits on a bridge with a host address in its subnet`,
    );
  }

  dial(instance: string, port: number): Promise<TunnelConn> {
    const { address, from } = this.route(instance);
    // node:net, loaded at the first dial, not at the agent's start (issue 24).
    return import("node:net").then((net) =>
      new Promise((resolve, reject) => {
        const s = net.connect({ host: address, port, localAddress: from });
        const timer = setTimeout(() => {
          s.destroy();
          reject(new TunnelDialError("dial-failed", `${address}:${port} from ${from}: no connection in time`));
        }, this.#o.timeoutMs ?? 10_000);
        s.once("error", (e) => {
          clearTimeout(timer);
          reject(new TunnelDialError("dial-failed", `${address}:${port} from ${from}: ${e.message}`, { cause: e }));
        });
        s.once("connect", () => {
          clearTimeout(timer);
          s.removeAllListeners("error");
          resolve(_conn(s));
        });
      })
    );
  }
}

/** A `node:net` socket as a {@link TunnelConn}. */
function _conn(s: Socket): TunnelConn {
  const readable = new ReadableStream<Uint8Array>({
    start(c) {
      let done = false;
      s.on("data", (b: Uint8Array) => {
        if (done) return;
        c.enqueue(new Uint8Array(b));
        if ((c.desiredSize ?? 0) <= 0) s.pause();
      });
      s.on("end", () => !done && (done = true, c.close()));
      s.on("close", () => !done && (done = true, c.close()));
      s.on("error", (e) => !done && (done = true, c.error(e)));
    },
    pull() {
      s.resume();
    },
  }, { highWaterMark: 4 });
  return {
    readable,
    write: (b) => new Promise<void>((res, rej) => s.write(b, (e) => (e ? rej(e) : res()))),
    close: () => void s.destroy(),
  };
}
