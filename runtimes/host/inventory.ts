/**
 * The host inventory `inventory.refresh` reports (core's `HostInventoryReader`), read from /proc, /sys and /etc:
 * hostname, boot id, kernel, OS release, DMI identity, CPUs (model, sockets, cores, threads, flags of interest),
 * memory, NUMA nodes with their huge pages, physical disks and NICs. The roots are injectable so tests run it against
 * a fake tree as well as the real host.
 *
 * @module
 */
import type { HostInventory } from "../../core/commands/kind_handlers/mod.ts";
import { listDir, pciBusIdOf, readAttr, readInt, realPath } from "./sysfs.ts";

/** CPU flags worth reporting (virtualisation and the vector extensions a memory snapshot depends on). */
export const CPU_FLAGS_OF_INTEREST = [
  "vmx",
  "svm",
  "avx",
  "avx2",
  "avx512f",
  "amx_tile",
  "sev",
  "sev_snp",
  "tdx_guest",
];

/** Block devices that are not disks. */
const VIRTUAL_DISK = /^(loop|ram|zram|dm-|md|sr|nbd|fd)\d*/;

/** Where to read from, and the address source (Deno.networkInterfaces on a host). */
export interface HostInventoryRoots {
  readonly proc?: string;
  readonly sys?: string;
  readonly etc?: string;
  readonly dev?: string;
  readonly interfaces?: () => { name: string; cidr: string }[];
}

/** Reads the inventory of the host it runs on. */
export class SysfsHostInventory {
  readonly #proc: string;
  readonly #sys: string;
  readonly #etc: string;
  readonly #dev: string;
  readonly #ifaces: () => { name: string; cidr: string }[];

  constructor(roots: HostInventoryRoots = {}) {
    this.#proc = roots.proc ?? "/proc";
    this.#sys = roots.sys ?? "/sys";
    this.#etc = roots.etc ?? "/etc";
    this.#dev = roots.dev ?? "/dev";
    this.#ifaces = roots.interfaces ?? (() => Deno.networkInterfaces());
  }

  /** The whole host inventory. */
  async read(): Promise<HostInventory> {
    const [cpu, memory, numa, disks, nics] = await Promise.all([
      this.cpu(),
      this.memoryBytes(),
      this.numaNodes(),
      this.disks(),
      this.nics(),
    ]);
    const os = await readAttr(`${this.#etc}/os-release`);
    const pretty = os?.split("\n").find((l) => l.startsWith("PRETTY_NAME="))?.slice(12).replace(/^"|"$/g, "") ?? "";
    return {
      hostname: (await readAttr(`${this.#proc}/sys/kernel/hostname`)) ?? "",
      boot_id: (await readAttr(`${this.#proc}/sys/kernel/random/boot_id`)) ?? "",
      kernel: (await readAttr(`${this.#proc}/sys/kernel/osrelease`)) ?? "",
      os_release: pretty,
      system_vendor: (await readAttr(`${this.#sys}/class/dmi/id/sys_vendor`)) ?? "",
      system_product: (await readAttr(`${this.#sys}/class/dmi/id/product_name`)) ?? "",
      system_serial: (await readAttr(`${this.#sys}/class/dmi/id/product_serial`)) ?? "",
      cpu,
      memory_bytes: memory,
      numa_nodes: numa,
      disks,
      nics,
    };
  }

  /** From /proc/cpuinfo: model, sockets (distinct physical ids), cores (distinct physical id/core id), threads. */
  async cpu(): Promise<NonNullable<HostInventory["cpu"]>> {
    const text = (await readAttr(`${this.#proc}/cpuinfo`)) ?? "";
    let model = "";
    let threads = 0;
    const sockets = new Set<string>();
    const cores = new Set<string>();
    const flags = new Set<string>();
    for (const block of text.split(/\n\s*\n/)) {
      const f: Record<string, string> = {};
      for (const line of block.split("\n")) {
        const i = line.indexOf(":");
        if (i > 0) f[line.slice(0, i).trim()] = line.slice(i + 1).trim();
      }
      if (f["processor"] === undefined) continue;
      threads++;
      model ||= f["model name"] ?? f["Model"] ?? "";
      const socket = f["physical id"] ?? "0";
      sockets.add(socket);
      cores.add(`${socket}/${f["core id"] ?? f["processor"]}`);
      for (const fl of (f["flags"] ?? f["Features"] ?? "").split(/\s+/)) {
        if (CPU_FLAGS_OF_INTEREST.includes(fl)) flags.add(fl);
      }
    }
    return { model, sockets: sockets.size, cores: cores.size, threads, flags: [...flags].sort() };
  }

  /** MemTotal in bytes. */
  async memoryBytes(): Promise<number> {
    return _meminfoKb((await readAttr(`${this.#proc}/meminfo`)) ?? "", "MemTotal") * 1024;
  }

  /** /sys/devices/system/node/node<N>: cpulist, MemTotal and the 2 MiB / 1 GiB huge page pools. */
  async numaNodes(): Promise<NonNullable<HostInventory["numa_nodes"]>> {
    const base = `${this.#sys}/devices/system/node`;
    const out: NonNullable<HostInventory["numa_nodes"]> = [];
    for (const name of await listDir(base)) {
      const m = /^node(\d+)$/.exec(name);
      if (!m) continue;
      const dir = `${base}/${name}`;
      const hp = `${dir}/hugepages`;
      out.push({
        id: Number(m[1]),
        cpus: (await readAttr(`${dir}/cpulist`)) ?? "",
        memory_bytes: _meminfoKb((await readAttr(`${dir}/meminfo`)) ?? "", "MemTotal") * 1024,
        hugepages_2mi_total: (await readInt(`${hp}/hugepages-2048kB/nr_hugepages`)) ?? 0,
        hugepages_2mi_free: (await readInt(`${hp}/hugepages-2048kB/free_hugepages`)) ?? 0,
        hugepages_1gi_total: (await readInt(`${hp}/hugepages-1048576kB/nr_hugepages`)) ?? 0,
        hugepages_1gi_free: (await readInt(`${hp}/hugepages-1048576kB/free_hugepages`)) ?? 0,
      });
    }
    return out;
  }

  /** Physical block devices of /sys/block (loop, ram, zram, device-mapper, md and optical devices left out). */
  async disks(): Promise<NonNullable<HostInventory["disks"]>> {
    const byId = await this.#byId();
    const out: NonNullable<HostInventory["disks"]> = [];
    for (const name of await listDir(`${this.#sys}/block`)) {
      if (VIRTUAL_DISK.test(name)) continue;
      const dir = `${this.#sys}/block/${name}`;
      const resolved = (await realPath(dir)) ?? "";
      if (resolved.includes("/devices/virtual/")) continue;
      const numa = (await readInt(`${dir}/device/numa_node`)) ?? (await readInt(`${dir}/device/device/numa_node`)) ??
        -1;
      out.push({
        name,
        by_id: byId.get(name) ?? "",
        model: (await readAttr(`${dir}/device/model`)) ?? "",
        serial: (await readAttr(`${dir}/device/serial`)) ?? (await readAttr(`${dir}/serial`)) ?? "",
        size_bytes: ((await readInt(`${dir}/size`)) ?? 0) * 512,
        rotational: (await readAttr(`${dir}/queue/rotational`)) === "1",
        transport: _transport(name, resolved),
        numa_node: numa,
      });
    }
    return out;
  }

  /** NICs with a backing device (physical or virtio), with their addresses from the interface list. */
  async nics(): Promise<NonNullable<HostInventory["nics"]>> {
    const addrs = new Map<string, string[]>();
    let ifaces: { name: string; cidr: string }[] = [];
    try {
      ifaces = this.#ifaces();
    } catch (e) {
      if (!(e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied)) throw e;
    }
    for (const i of ifaces) addrs.set(i.name, [...(addrs.get(i.name) ?? []), i.cidr]);
    const out: NonNullable<HostInventory["nics"]> = [];
    for (const name of await listDir(`${this.#sys}/class/net`)) {
      const dir = `${this.#sys}/class/net/${name}`;
      const device = await realPath(`${dir}/device`);
      if (device === undefined) continue;
      const speed = (await readInt(`${dir}/speed`)) ?? 0;
      const driver = await realPath(`${dir}/device/driver`);
      out.push({
        name,
        mac: (await readAttr(`${dir}/address`)) ?? "",
        speed_mbps: speed > 0 ? speed : 0,
        pci_bus_id: pciBusIdOf(device),
        numa_node: (await readInt(`${dir}/device/numa_node`)) ?? (await readInt(`${device}/../numa_node`)) ?? -1,
        driver: driver?.split("/").at(-1) ?? "",
        addresses: (addrs.get(name) ?? []).sort(),
        link_up: (await readAttr(`${dir}/operstate`)) === "up",
      });
    }
    return out;
  }

  /** Kernel name → the first `/dev/disk/by-id` link to it (sorted, `wwn-` last). */
  async #byId(): Promise<Map<string, string>> {
    const dir = `${this.#dev}/disk/by-id`;
    const names = (await listDir(dir)).sort((a, b) => Number(a.startsWith("wwn-")) - Number(b.startsWith("wwn-")));
    const out = new Map<string, string>();
    for (const n of names) {
      const target = await realPath(`${dir}/${n}`);
      const kname = target?.split("/").at(-1);
      if (kname !== undefined && !out.has(kname)) out.set(kname, `${dir}/${n}`);
    }
    return out;
  }
}

function _meminfoKb(text: string, key: string): number {
  const m = new RegExp(`(?:^|\\n)(?:Node \\d+ )?${key}:\\s+(\\d+) kB`).exec(text);
  return m ? Number(m[1]) : 0;
}

function _transport(name: string, resolved: string): string {
  if (name.startsWith("nvme")) return "nvme";
  if (name.startsWith("vd") || resolved.includes("/virtio")) return "virtio";
  if (resolved.includes("/usb")) return "usb";
  if (/\/(host\d+\/)?port-\d+|\/sas_/.test(resolved) || resolved.includes("/expander-")) return "sas";
  if (resolved.includes("/ata")) return "sata";
  return "";
}
