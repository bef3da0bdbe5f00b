/**
 * VFIO binding of whole IOMMU groups for cloud-hypervisor's GPUs (seed 000 §The runtimes, GPUs, and "cloud-hypervisor
 * under bcd helper", `ch.vfio`): root binds every endpoint of each GPU's IOMMU group to `vfio-pci` itself — the GPU's
 * audio function too, since VFIO refuses a group with a device on a host driver; PCI bridges stay on `pcieport` — and
 * checks that each moved, so a host without `vfio-pci` loaded fails the start. A group is taken only when every device
 * in it is one of this host's GPUs, a function of one (same domain, bus and slot), or a PCI bridge (class `0x0604`);
 * anything else refuses it `vfio-group-foreign`.
 *
 * Per device, through sysfs: `driver_override` ← `vfio-pci`, `driver/unbind` ← the address (when bound elsewhere),
 * `bus/pci/drivers_probe` ← the address, then `driver` must point at `vfio-pci` (`vfio-bind-failed`). Giving a device
 * back clears `driver_override`, unbinds it from `vfio-pci` and probes again, so its host driver takes it.
 * `/dev/vfio/<group>` is handed to the VMM's uid (0600) and back to root; who holds a group is read from
 * `/dev/vfio` itself, never from a record the node wrote.
 *
 * Every path is built from `sys` and `dev` roots (the real `/sys` and `/dev`, or a test's fake tree) and a device
 * address checked against the PCI pattern; writes go through {@link SysfsWriter} so a fake kernel can answer them.
 *
 * @module
 */
import { sysfsBdf } from "../nvidia/nvidia_smi.ts";

/** A group root will not bind, or a device that did not move; `reason` says which. */
export class VfioRefused extends Error {
  override name = "VfioRefused";
  constructor(readonly reason: "vfio-group-foreign" | "vfio-bind-failed" | "vfio-no-group", message: string) {
    super(message);
  }
}

/** Writes one sysfs attribute (the kernel reacts; a fake tree emulates it). */
export type SysfsWriter = (path: string, text: string) => Promise<void>;

/** Options of {@link VfioBinder}. */
export interface VfioOptions {
  /** `/sys`. */
  readonly sys: string;
  /** `/dev`. */
  readonly dev: string;
  readonly write?: SysfsWriter;
}

const BDF = /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/;
const GROUP = /^\d{1,6}$/;

/** One IOMMU group and the devices in it. */
export interface IommuGroup {
  readonly group: string;
  /** The endpoints bound to `vfio-pci` (the GPUs and their functions). */
  readonly endpoints: readonly string[];
  /** The bridges left on their driver. */
  readonly bridges: readonly string[];
}

/** The binder. */
export class VfioBinder {
  readonly #o: VfioOptions;
  readonly #write: SysfsWriter;

  constructor(opts: VfioOptions) {
    this.#o = opts;
    this.#write = opts.write ?? ((p, t) => Deno.writeTextFile(p, t));
  }

  #dev(bdf: string): string {
    if (!BDF.test(bdf)) throw new TypeError(`${JSON.stringify(bdf)} is not a PCI address`);
    return `${this.#o.sys}/bus/pci/devices/${bdf}`;
  }

  /** The groups of `gpus` (inventory bus ids), each checked against `hostGpus` (all of this host's GPUs). */
  async groups(gpus: readonly string[], hostGpus: readonly string[]): Promise<IommuGroup[]> {
    const host = hostGpus.map(sysfsBdf);
    const slot = (b: string) => b.slice(0, b.lastIndexOf("."));
    const out = new Map<string, IommuGroup>();
    for (const g of gpus.map(sysfsBdf)) {
      if (!host.includes(g)) throw new VfioRefused("vfio-group-foreign", `GPU ${g} is not one of this host's GPUs`);
      const group = await this.#groupOf(g);
      if (out.has(group)) continue;
      const endpoints: string[] = [];
      const bridges: string[] = [];
      for await (const e of Deno.readDir(`${this.#o.sys}/kernel/iommu_groups/${group}/devices`)) {
        const d = e.name;
        if (!BDF.test(d)) throw new VfioRefused("vfio-group-foreign", `group ${group} holds ${JSON.stringify(d)}`);
        const cls = (await Deno.readTextFile(`${this.#dev(d)}/class`)).trim().toLowerCase();
        if (cls.startsWith("0x0604")) bridges.push(d);
        else if (host.some((h) => slot(h) === slot(d))) endpoints.push(d);
        else {
          throw new VfioRefused(
            "vfio-group-foreign",
            `IOMMU group ${group} of GPU ${g} holds ${d} (class ${cls}), which is neither a GPU of this host, a function of one, nor a PCI bridge`,
          );
        }
      }
      out.set(group, { group, endpoints: endpoints.sort(), bridges: bridges.sort() });
    }
    return [...out.values()];
  }

  async #groupOf(bdf: string): Promise<string> {
    let link: string;
    try {
      link = await Deno.readLink(`${this.#dev(bdf)}/iommu_group`);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new VfioRefused("vfio-no-group", `${bdf} has no IOMMU group (is the IOMMU on?)`);
      }
      throw e;
    }
    const group = link.slice(link.lastIndexOf("/") + 1);
    if (!GROUP.test(group)) throw new VfioRefused("vfio-no-group", `${bdf}'s IOMMU group ${JSON.stringify(group)}`);
    return group;
  }

  /** The driver `bdf` is bound to, or `undefined`. */
  async driver(bdf: string): Promise<string | undefined> {
    try {
      const l = await Deno.readLink(`${this.#dev(bdf)}/driver`);
      return l.slice(l.lastIndexOf("/") + 1);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  }

  /** Binds every endpoint of `g` to `vfio-pci` and checks that each moved. */
  async bind(g: IommuGroup): Promise<void> {
    for (const d of g.endpoints) {
      const dev = this.#dev(d);
      await this.#write(`${dev}/driver_override`, "vfio-pci");
      const now = await this.driver(d);
      if (now === "vfio-pci") continue;
      if (now !== undefined) await this.#write(`${dev}/driver/unbind`, d);
      await this.#write(`${this.#o.sys}/bus/pci/drivers_probe`, d);
      const after = await this.driver(d);
      if (after !== "vfio-pci") {
        throw new VfioRefused(
          "vfio-bind-failed",
          `${d} is on ${after ?? "no driver"} after the probe, not vfio-pci (is the vfio-pci module loaded?)`,
        );
      }
    }
  }

  /** Gives every endpoint of `g` back to its host driver. */
  async release(g: IommuGroup): Promise<void> {
    for (const d of g.endpoints) {
      const dev = this.#dev(d);
      await this.#write(`${dev}/driver_override`, "\n");
      if ((await this.driver(d)) === "vfio-pci") await this.#write(`${dev}/driver/unbind`, d);
      await this.#write(`${this.#o.sys}/bus/pci/drivers_probe`, d);
    }
  }

  /** `/dev/vfio/<group>`'s owner uid (`undefined` when the node is not there). */
  async owner(group: string): Promise<number | undefined> {
    if (!GROUP.test(group)) throw new TypeError(`IOMMU group ${group}`);
    try {
      return (await Deno.lstat(`${this.#o.dev}/vfio/${group}`)).uid ?? undefined;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  }

  /** Hands `/dev/vfio/<group>` to `uid`, mode 0600 (`uid` 0: back to root). */
  async give(group: string, uid: number): Promise<void> {
    if (!GROUP.test(group)) throw new TypeError(`IOMMU group ${group}`);
    const p = `${this.#o.dev}/vfio/${group}`;
    await Deno.chown(p, uid, uid === 0 ? 0 : uid);
    await Deno.chmod(p, 0o600);
  }

  /** The groups whose `/dev/vfio` node `uid` owns. */
  async heldBy(uid: number): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const e of Deno.readDir(`${this.#o.dev}/vfio`)) {
        if (GROUP.test(e.name) && (await this.owner(e.name)) === uid) out.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out.sort();
  }
}
