/**
 * Test support: a fake `/sys` and `/dev` for VFIO binding, with a kernel that answers the writes `vfio.ts` makes
 * (`driver_override`, `driver/unbind`, `drivers_probe`) by moving each device's `driver` link as Linux does: a probe
 * binds a device to its override when that driver is loaded (its directory under `bus/pci/drivers` exists), else to
 * its host driver. Devices are laid out as sysfs has them (`bus/pci/devices/<bdf>/{class,iommu_group,driver}`,
 * `kernel/iommu_groups/<n>/devices/<bdf>`, `/dev/vfio/<n>`).
 *
 * @module
 */
import type { SysfsWriter } from "./vfio.ts";

/** One PCI device of the fake host. */
export interface FakePciDevice {
  readonly bdf: string;
  /** `0x030200` a 3D controller (GPU), `0x040300` audio, `0x060400` a PCI bridge, `0x020000` a NIC. */
  readonly class: string;
  readonly driver: string;
  readonly group: string;
}

/** The tree and its kernel. */
export interface FakeVfioTree {
  readonly sys: string;
  readonly dev: string;
  readonly write: SysfsWriter;
  /** Every write, as `path <- text` relative to the root. */
  readonly writes: string[];
}

/** Lays out `devices` under `root`; `vfioLoaded` says whether the `vfio-pci` driver exists. */
export async function writeFakeVfioTree(
  root: string,
  devices: readonly FakePciDevice[],
  vfioLoaded: boolean,
): Promise<FakeVfioTree> {
  const sys = `${root}/sys`;
  const dev = `${root}/dev`;
  const host = new Map<string, string>();
  const drivers = new Set([...devices.map((d) => d.driver), ...(vfioLoaded ? ["vfio-pci"] : [])]);
  for (const d of drivers) await Deno.mkdir(`${sys}/bus/pci/drivers/${d}`, { recursive: true });
  await Deno.mkdir(`${dev}/vfio`, { recursive: true });
  for (const d of devices) {
    const p = `${sys}/bus/pci/devices/${d.bdf}`;
    await Deno.mkdir(p, { recursive: true });
    await Deno.writeTextFile(`${p}/class`, `${d.class}\n`);
    await Deno.writeTextFile(`${p}/driver_override`, "(null)\n");
    await Deno.mkdir(`${sys}/kernel/iommu_groups/${d.group}/devices`, { recursive: true });
    await Deno.writeTextFile(`${sys}/kernel/iommu_groups/${d.group}/devices/${d.bdf}`, "");
    await Deno.symlink(`../../../../kernel/iommu_groups/${d.group}`, `${p}/iommu_group`);
    await Deno.symlink(`../../../../bus/pci/drivers/${d.driver}`, `${p}/driver`);
    await Deno.writeTextFile(`${dev}/vfio/${d.group}`, "");
    host.set(d.bdf, d.driver);
  }
  const writes: string[] = [];
  const write: SysfsWriter = async (path, text) => {
    writes.push(`${path.slice(root.length)} <- ${text.trim()}`);
    const bdf = text.trim();
    if (path.endsWith("/driver_override")) {
      await Deno.writeTextFile(path, bdf === "" ? "(null)\n" : `${bdf}\n`);
    } else if (path.endsWith("/driver/unbind")) {
      await Deno.remove(`${sys}/bus/pci/devices/${bdf}/driver`);
    } else if (path === `${sys}/bus/pci/drivers_probe`) {
      const d = `${sys}/bus/pci/devices/${bdf}`;
      const has = await Deno.lstat(`${d}/driver`).then(() => true, () => false);
      if (has) return;
      const o = (await Deno.readTextFile(`${d}/driver_override`)).trim();
      const want = o !== "(null)" ? o : host.get(bdf)!;
      if (await Deno.lstat(`${sys}/bus/pci/drivers/${want}`).then(() => true, () => false)) {
        await Deno.symlink(`../../../../bus/pci/drivers/${want}`, `${d}/driver`);
      }
    } else {
      throw new Error(`the fake kernel has no attribute ${path}`);
    }
  };
  return { sys, dev, write, writes };
}
