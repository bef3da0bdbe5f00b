/**
 * {@link IpTaps}: root's taps for cloud-hypervisor with the real tools. A tap is made persistent by
 * `ip tuntap add dev NAME mode tap vnet_hdr user UID` (owned by the node's uid, so its owner may attach to it), put on
 * its bridge and brought up with `ip link set`; its kind comes from `ip -d -j link show` (`linkinfo.info_kind` `tun`
 * with `info_data.type` `tap`); `open` attaches to it with `TUNSETIFF` (`IFF_TAP | IFF_NO_PI | IFF_VNET_HDR`, what
 * cloud-hypervisor's virtio-net expects of a tap fd).
 *
 * `netns` runs all of it inside a network namespace (tests: one the test made; `open` enters it with `setns` on the
 * calling thread for the `TUNSETIFF` and leaves again).
 *
 * @module
 */
import type { TapPort } from "./ch_host.ts";
import {
  check,
  CLONE_NEWNET,
  cstr,
  IFF_NO_PI,
  IFF_TAP,
  IFF_VNET_HDR,
  ifreq,
  libc,
  O_CLOEXEC,
  O_RDONLY,
  O_RDWR,
  TUNSETIFF,
} from "./libc.ts";

/** A failed `ip`. */
export class IpToolError extends Error {
  override name = "IpToolError";
}

const IFNAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;

/** The real taps. */
export class IpTaps implements TapPort {
  constructor(readonly opts: { readonly netns?: string } = {}) {
    if (opts.netns !== undefined && !IFNAME.test(opts.netns)) throw new TypeError(`netns ${opts.netns}`);
  }

  async #ip(args: string[]): Promise<string> {
    const full = this.opts.netns ? ["-n", this.opts.netns, ...args] : args;
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command("ip", { args: full, stdin: "null", stdout: "piped", stderr: "piped" }).output();
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new IpToolError("ip is not installed", { cause: e });
      throw e;
    }
    if (!out.success) {
      const msg = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-2).join("; ");
      throw new IpToolError(`ip ${args.slice(0, 3).join(" ")}: ${msg || `exit ${out.code}`}`);
    }
    return new TextDecoder().decode(out.stdout).slice(0, 64 * 1024);
  }

  async kind(name: string): Promise<"tap" | "other" | "none"> {
    _name(name);
    let text: string;
    try {
      text = await this.#ip(["-d", "-j", "link", "show", "dev", name]);
    } catch (e) {
      if (e instanceof IpToolError && /does not exist/.test(e.message)) return "none";
      throw e;
    }
    const links = JSON.parse(text) as Array<{ linkinfo?: { info_kind?: string; info_data?: { type?: string } } }>;
    const l = links[0];
    if (!l) return "none";
    return l.linkinfo?.info_kind === "tun" && l.linkinfo.info_data?.type === "tap" ? "tap" : "other";
  }

  async ensure(name: string, bridge: string, owner: number): Promise<void> {
    _name(name);
    _name(bridge);
    if (!Number.isSafeInteger(owner) || owner < 0) throw new RangeError(`tap owner ${owner}`);
    if ((await this.kind(name)) === "none") {
      await this.#ip(["tuntap", "add", "dev", name, "mode", "tap", "vnet_hdr", "user", String(owner)]);
    }
    await this.#ip(["link", "set", "dev", name, "master", bridge]);
    await this.#ip(["link", "set", "dev", name, "up"]);
  }

  async remove(name: string): Promise<void> {
    _name(name);
    if ((await this.kind(name)) !== "tap") return;
    await this.#ip(["tuntap", "del", "dev", name, "mode", "tap"]);
  }

  open(name: string): Promise<number> {
    _name(name);
    const c = libc();
    let back = -1;
    let ns = -1;
    try {
      if (this.opts.netns) {
        back = check(
          "open /proc/thread-self/ns/net",
          c.open(cstr("/proc/thread-self/ns/net"), O_RDONLY | O_CLOEXEC, 0),
        );
        ns = check(
          `open netns ${this.opts.netns}`,
          c.open(cstr(`/run/netns/${this.opts.netns}`), O_RDONLY | O_CLOEXEC, 0),
        );
        check("setns", c.setns(ns, CLONE_NEWNET));
      }
      const fd = check("open /dev/net/tun", c.open(cstr("/dev/net/tun"), O_RDWR | O_CLOEXEC, 0));
      try {
        check(`TUNSETIFF ${name}`, c.ioctl(fd, BigInt(TUNSETIFF), ifreq(name, IFF_TAP | IFF_NO_PI | IFF_VNET_HDR)));
      } catch (e) {
        c.close(fd);
        throw e;
      }
      return Promise.resolve(fd);
    } catch (e) {
      return Promise.reject(e);
    } finally {
      if (back >= 0) {
        check("setns back", c.setns(back, CLONE_NEWNET));
        c.close(back);
      }
      if (ns >= 0) c.close(ns);
    }
  }

  close(fd: number): void {
    libc().close(fd);
  }
}

function _name(n: string): void {
  if (!IFNAME.test(n)) throw new TypeError(`${JSON.stringify(n)} is not an interface name`);
}
