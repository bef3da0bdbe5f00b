/**
 * What the node asks a privileged libvirt host to define: a {@link DomainPlan} (instance id, sizes, the base image by
 * digest, NICs, GPUs, placement, whether a seed ISO is attached) — never a path or a piece of XML. The root side
 * (`runtimes/libvirt/libvirt_host.ts`, behind the helper's `libvirt.*` ops) builds every path from its own data dir and
 * the instance id, renders the domain XML itself, and so can put nothing in it but bcd's devices.
 *
 * {@link LibvirtHostPort} is that side's interface, implemented in process (tests, a root node) and over the helper.
 * A refusal no retry fixes (a bad image, a foreign domain, a start libvirt refuses for lack of memory) is a result,
 * `{ refused }`, carrying its reason; a failure is a thrown error and is retried next pass.
 *
 * @module
 */
import type { ImageFormat } from "../../images/qcow2_header.ts";
import { MAX_ATTACHMENTS, VOLUME_ID, VOLUME_SERIAL } from "../../volumes/grammar.ts";
import { INSTANCE_ID } from "./instance_id.ts";

/** A domain's power state. */
export type DomainState = "running" | "paused" | "stopped";

/** The huge page size of a placement. */
export type HugePageSize = "none" | "2M" | "1G";

/** `InstanceSpec.placement`, checked. */
export interface PlanPlacement {
  /** Host cpulist (`0-3,8`). */
  readonly cpus: string;
  /** NUMA node list for the memory (`0`), or empty. */
  readonly mems: string;
  readonly hugepages: HugePageSize;
  readonly balloon: boolean;
}

/** A NIC: its MAC and bridge; the tap is `tapName(id, i)`. */
export interface PlanNic {
  readonly mac: string;
  readonly bridge: string;
}

/** A GPU to pass through: its UUID and PCI bus id from the inventory. */
export interface PlanGpu {
  readonly uuid: string;
  readonly pciBusId: string;
}

/**
 * A volume attached to the domain (000 §Persistent volumes): a raw virtio disk on `<data dir>/volumes/<id>.raw`
 * (root builds the path), its serial, read-only when asked, at guest device `dev` (`vdb` to `vdy`). A define numbers
 * them in spec order from `vdb`; a live attach takes the first free device, so a device never moves under a running
 * guest (the guest finds a volume by its serial, `/dev/disk/by-id/virtio-<serial>`).
 */
export interface PlanVolume {
  readonly id: string;
  readonly serial: string;
  readonly readOnly: boolean;
  readonly dev: string;
}

/** A volume's guest device: `vdb` to `vdy` (`vda` is the root disk, `vdz` the identity rebind disk). */
export const VOLUME_DEV = /^vd[b-y]$/;

/** The identity rebind disk (000 §Identity rebind): `instances/<id>/rebind.raw`, 1 MiB, hot-added as `vdz`. */
export const REBIND_DISK = { file: "rebind.raw", dev: "vdz", serial: "bc-rebind", bytes: 1024 * 1024 } as const;

/** The domain bcd asks for. */
export interface DomainPlan {
  /** The instance id, which is also the domain name and the directory name under `instances/`. */
  readonly id: string;
  readonly allocationId: string;
  readonly vcpus: number;
  readonly memoryMiB: number;
  /** The base image by digest and format; `null` for a disk restored from a snapshot (no backing file). */
  readonly image: { readonly sha256: string; readonly format: ImageFormat } | null;
  readonly nics: readonly PlanNic[];
  readonly gpus: readonly PlanGpu[];
  readonly placement: PlanPlacement | null;
  /** Whether `instances/<id>/seed.iso` (the NoCloud user data) is attached. */
  readonly seed: boolean;
  /** The snapshot digest the disk came from, recorded in the metadata. */
  readonly restoredFrom: string | null;
  /** The volumes attached (absent in plans written before volumes: none). */
  readonly volumes?: readonly PlanVolume[];
}

/** A domain the host lists; `plan` only for domains bcd defined (read back from its metadata). */
export interface HostDomain {
  readonly name: string;
  readonly state: DomainState;
  readonly plan: DomainPlan | undefined;
}

/** A refusal no retry fixes, with the seed's reason. */
export interface Refusal {
  readonly reason: string;
  readonly message: string;
}

/** The outcome of a verb: done, or refused. */
export type HostOutcome = { readonly refused?: Refusal };

/** The privileged half of the `libvirt-kvm` runtime. Every verb names a domain by instance id. */
export interface LibvirtHostPort {
  list(): Promise<HostDomain[]>;
  define(plan: DomainPlan): Promise<HostOutcome>;
  start(id: string, paused: boolean): Promise<HostOutcome>;
  suspend(id: string): Promise<HostOutcome>;
  resume(id: string): Promise<HostOutcome>;
  shutdown(id: string): Promise<HostOutcome>;
  destroy(id: string): Promise<HostOutcome>;
  undefine(id: string): Promise<HostOutcome>;
  /** Grows the running domain's root disk (`vda`) to `bytes`; with `volume`, tells it that volume's disk grew. */
  blockresize(id: string, bytes: number, volume?: string): Promise<HostOutcome>;
  /**
   * Hot-plugs a disk into a running or paused domain (000 §Persistent volumes, §Identity rebind): a volume at the
   * first free device, then written into the domain's definition; or the identity rebind disk
   * ({@link REBIND_DISK}), live only. Root builds the path from the volume id or the instance id.
   */
  attachDisk(id: string, disk: HotDisk): Promise<HostOutcome>;
  /** Unplugs a hot-plugged disk (a volume: also from the definition) and closes its file again. */
  detachDisk(id: string, disk: HotDiskRef): Promise<HostOutcome>;
  /**
   * Saves a running or paused domain's memory state to `instances/<id>/memory.save` (the root side builds the path;
   * the file is handed to the instance directory's owner, 0600); the domain is then shut off.
   */
  save(id: string): Promise<HostOutcome>;
  /**
   * Runs a stopped, defined domain from `instances/<id>/memory.save` with the domain XML the root side renders from
   * its plan (never the definition in the file), running or paused.
   */
  restore(id: string, paused: boolean): Promise<HostOutcome>;
  /** Sets a running domain's balloon target, KiB (1 to its memory; a domain without a balloon is refused). */
  setmem(id: string, kib: number): Promise<HostOutcome>;
  /** A running domain's balloon figures, KiB. */
  domstats(id: string): Promise<HostOutcome & { readonly balloon?: BalloonFigures }>;
}

/** What {@link LibvirtHostPort.attachDisk} plugs in. */
export type HotDisk =
  | { readonly volume: { readonly id: string; readonly serial: string; readonly readOnly: boolean } }
  | { readonly rebind: true };

/** What {@link LibvirtHostPort.detachDisk} unplugs: a volume by id, or the rebind disk. */
export type HotDiskRef = { readonly volume: string } | { readonly rebind: true };

/** A domain's balloon, KiB (`null`: libvirt reports none; `usedKiB` needs the guest driver's statistics). */
export interface BalloonFigures {
  readonly currentKiB: number | null;
  readonly maximumKiB: number | null;
  /** What the guest uses: its total less what it could free. */
  readonly usedKiB: number | null;
}

/** The file a memory state lives in, inside the instance's directory. */
export const MEMORY_STATE_FILE = "memory.save";

/**
 * The guest channels every domain gets (issue 21): virtio-serial ports whose host ends are unix sockets in the
 * instance's directory, which the helper renders into the domain XML and hands to the directory's owner (the node)
 * after each start or restore. `org.bcd.turns` carries the turn protocol (seed 001: drain and `Resumed` for
 * `instance.migrate`), `org.bcd.framing` the control framing (seed 002/004: fleet config). Both are proven with the
 * instance's channel key ({@link CHANNEL_KEY_FILE}, which the node also writes onto the seed ISO).
 */
export const GUEST_CHANNELS = [
  { name: "org.bcd.turns", socket: "turns.sock" },
  { name: "org.bcd.framing", socket: "framing.sock" },
] as const;

/** The instance's channel key (64 hex digits, mode 0600, the node's), inside the instance's directory. */
export const CHANNEL_KEY_FILE = "channel.key";

export { INSTANCE_ID };
/** A unicast MAC in lowercase or uppercase hex. */
export const MAC = /^[0-9A-Fa-f][02468ACEace](?::[0-9A-Fa-f]{2}){5}$/;
/** A bridge name: a Linux interface name that is not an instance tap (`bc*`). */
export const BRIDGE = /^(?!bc)[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;
/** A PCI bus id as the inventory spells it. */
export const PCI_BUS_ID = /^[0-9A-Fa-f]{4}(?:[0-9A-Fa-f]{4})?:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/;
/** A cpulist or NUMA node list (`0-3,8`). */
export const CPULIST = /^\d{1,4}(?:-\d{1,4})?(?:,\d{1,4}(?:-\d{1,4})?){0,255}$/;
/** A lowercase SHA-256. */
export const SHA256 = /^[0-9a-f]{64}$/;
/** The most vCPUs and MiB a plan may ask for (libvirt's own bounds are higher; these catch nonsense). */
export const MAX_VCPUS = 1024;
export const MAX_MEMORY_MIB = 16 * 1024 * 1024;
export const MAX_NICS_PER_PLAN = 16;
export const MAX_GPUS_PER_PLAN = 16;

/** The CPUs a cpulist names, or `undefined` when a range runs backwards. */
export function cpulistSize(list: string): number | undefined {
  let n = 0;
  for (const part of list.split(",")) {
    const [a, b] = part.split("-").map(Number) as [number, number | undefined];
    if (b !== undefined && b < a) return undefined;
    n += b === undefined ? 1 : b - a + 1;
  }
  return n;
}

/**
 * Checks a plan field by field, default-deny; returns the first problem as `[field, value, why]`, or `undefined`.
 * Both sides run it: the node before it asks, the helper before it renders.
 */
export function planProblem(p: DomainPlan): [string, unknown, string] | undefined {
  if (!INSTANCE_ID.test(p.id)) return ["id", p.id, "is not an instance id"];
  if (!Number.isSafeInteger(p.vcpus) || p.vcpus < 1 || p.vcpus > MAX_VCPUS) {
    return ["vcpus", p.vcpus, `is not 1 to ${MAX_VCPUS}`];
  }
  if (!Number.isSafeInteger(p.memoryMiB) || p.memoryMiB < 1 || p.memoryMiB > MAX_MEMORY_MIB) {
    return ["memoryMiB", p.memoryMiB, `is not 1 to ${MAX_MEMORY_MIB} MiB`];
  }
  if (p.image !== null) {
    if (!SHA256.test(p.image.sha256)) return ["image.sha256", p.image.sha256, "is not a lowercase SHA-256"];
    if (!["qcow2", "raw", "iso"].includes(p.image.format)) {
      return ["image.format", p.image.format, "is not qcow2, raw or iso"];
    }
  }
  if (p.nics.length > MAX_NICS_PER_PLAN) return ["nics", p.nics.length, `is more than ${MAX_NICS_PER_PLAN} NICs`];
  for (const [i, n] of p.nics.entries()) {
    if (!MAC.test(n.mac)) return [`nics[${i}].mac`, n.mac, "is not a unicast MAC"];
    if (!BRIDGE.test(n.bridge)) return [`nics[${i}].bridge`, n.bridge, "is not a bridge name (bc* is an instance tap)"];
  }
  if (p.gpus.length > MAX_GPUS_PER_PLAN) return ["gpus", p.gpus.length, `is more than ${MAX_GPUS_PER_PLAN} GPUs`];
  for (const [i, g] of p.gpus.entries()) {
    if (!PCI_BUS_ID.test(g.pciBusId)) return [`gpus[${i}].pciBusId`, g.pciBusId, "is not a PCI bus id"];
  }
  const pl = p.placement;
  if (pl !== null) {
    if (!CPULIST.test(pl.cpus)) return ["placement.cpus", pl.cpus, "is not a cpulist"];
    const n = cpulistSize(pl.cpus);
    if (n === undefined || n < p.vcpus) return ["placement.cpus", pl.cpus, `names fewer CPUs than ${p.vcpus} vCPUs`];
    if (pl.mems !== "" && (!CPULIST.test(pl.mems) || cpulistSize(pl.mems) === undefined)) {
      return ["placement.mems", pl.mems, "is not a NUMA node list"];
    }
    if (!["none", "2M", "1G"].includes(pl.hugepages)) {
      return ["placement.hugepages", pl.hugepages, "is not none, 2M or 1G"];
    }
    if (pl.hugepages !== "none" && pl.balloon) return ["placement.balloon", true, "is set with huge pages"];
    const page = pl.hugepages === "2M" ? 2 : pl.hugepages === "1G" ? 1024 : 1;
    if (p.memoryMiB % page !== 0) return ["memoryMiB", p.memoryMiB, `is not whole ${pl.hugepages} pages`];
  }
  if (p.restoredFrom !== null && !SHA256.test(p.restoredFrom)) {
    return ["restoredFrom", p.restoredFrom, "is not a lowercase SHA-256"];
  }
  return volumesProblem(p.volumes ?? []);
}

/** Checks a plan's volumes: at most {@link MAX_ATTACHMENTS}, each id, serial and device valid and used once. */
export function volumesProblem(vs: readonly PlanVolume[]): [string, unknown, string] | undefined {
  if (vs.length > MAX_ATTACHMENTS) return ["volumes", vs.length, `is more than ${MAX_ATTACHMENTS} volumes`];
  const ids = new Set<string>();
  const devs = new Set<string>();
  for (const [i, v] of vs.entries()) {
    if (!VOLUME_ID.test(v.id)) return [`volumes[${i}].id`, v.id, "is not a volume id"];
    if (!VOLUME_SERIAL.test(v.serial)) return [`volumes[${i}].serial`, v.serial, "is not a volume serial"];
    if (typeof v.readOnly !== "boolean") return [`volumes[${i}].readOnly`, v.readOnly, "is not a boolean"];
    if (!VOLUME_DEV.test(v.dev)) return [`volumes[${i}].dev`, v.dev, "is not vdb to vdy"];
    if (ids.has(v.id)) return [`volumes[${i}].id`, v.id, "is attached twice"];
    if (devs.has(v.dev)) return [`volumes[${i}].dev`, v.dev, "is used twice"];
    ids.add(v.id);
    devs.add(v.dev);
  }
  return undefined;
}
