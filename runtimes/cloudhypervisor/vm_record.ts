/**
 * `instances/<id>/vm.json`, bcd's record of a cloud-hypervisor instance (seed 000 §The runtimes, Ownership:
 * cloud-hypervisor keeps no registry, so this file is what makes a directory bcd's): allocation, image digest, MACs,
 * bridges, GPUs, the VMM's uid and the VM configuration bcd sends at `vm.create`.
 *
 * It is read strictly, since the VMM that ran as the instance's user could write into its directory and root reads
 * it too (`ch.launch`): the file must be a regular file (no symlink) of at most {@link MAX_RECORD_BYTES}, every key
 * known, every field checked ({@link planProblem} for the plan's fields, the uid in bcd's range), and the
 * configuration may name no file outside the instance's own directory — only `disk.qcow2` and `seed.iso` there, the
 * firmware, `serial.sock` there, `/dev/urandom`, the volume store's `<id>.raw` files and the sysfs paths of the
 * record's own GPUs. A refusal is {@link ChRecordRefused} `invalid-record` naming the field and the value.
 *
 * @module
 */
import { type DomainPlan, planProblem } from "../../core/converge/instances/domain_plan.ts";
import type { PlanGpu, PlanNic, PlanPlacement } from "../../core/converge/instances/domain_plan.ts";
import type { VmConfig } from "./api_types.ts";
import { CPUS_KEYS, MEMORY_KEYS, PLATFORM_KEYS, VM_CONFIG_KEYS } from "./config_keys.ts";
import { CH_FIRMWARE, VMM_UID_BASE, VMM_UID_COUNT } from "./unit.ts";

/** The record's file name inside the instance directory. */
export const RECORD_FILE = "vm.json";
/** The largest `vm.json` read. */
export const MAX_RECORD_BYTES = 256 * 1024;

/** A volume the instance attaches (by the volume store's id and serial). */
export interface ChVolume {
  readonly id: string;
  readonly serial: string;
  readonly readonly: boolean;
}

/** The record. */
export interface ChRecord {
  readonly v: 1;
  readonly id: string;
  readonly allocationId: string;
  readonly uid: number;
  readonly vcpus: number;
  readonly memoryBytes: number;
  /** The base image (never an iso); `null` for a disk restored from a snapshot. */
  readonly image: { readonly sha256: string; readonly format: "qcow2" | "raw" } | null;
  readonly restoredFrom: string | null;
  readonly nics: readonly PlanNic[];
  readonly gpus: readonly PlanGpu[];
  readonly placement: PlanPlacement | null;
  readonly volumes: readonly ChVolume[];
  /** The configuration sent at `vm.create` (no NICs: each is added with its tap's fd). */
  readonly config: VmConfig;
}

/** A `vm.json` bcd will not use; `reason` is `invalid-record`. */
export class ChRecordRefused extends Error {
  override name = "ChRecordRefused";
  readonly reason = "invalid-record";
}

const RECORD_KEYS = [
  "v",
  "id",
  "allocationId",
  "uid",
  "vcpus",
  "memoryBytes",
  "image",
  "restoredFrom",
  "nics",
  "gpus",
  "placement",
  "volumes",
  "config",
];
const VOLUME_ID = /^[A-Za-z0-9_-]{1,80}$/;
const SERIAL = /^[a-z0-9-]{1,20}$/;
const MiB = 1024 * 1024;

/** Where the record's files live: the instance directory and the volume store. */
export interface RecordPaths {
  /** `<runtime dir>/instances/<id>`. */
  readonly instanceDir: string;
  /** The volume store's directory (`<data dir>/volumes`). */
  readonly volumesDir: string;
}

/** A volume's file in the store. */
export function volumePath(volumesDir: string, id: string): string {
  return `${volumesDir}/${id}.raw`;
}

/**
 * Checks a record field by field and every path its configuration names; answers the first problem, or `undefined`.
 * Both sides run it: the node before it writes the file, root before it launches from it.
 */
export function recordProblem(r: ChRecord, p: RecordPaths): string | undefined {
  const bad = (field: string, value: unknown, why: string) => `vm.json ${field} ${JSON.stringify(value)} ${why}`;
  if (typeof r !== "object" || r === null) return "vm.json is not an object";
  for (const k of Object.keys(r)) if (!RECORD_KEYS.includes(k)) return bad("key", k, "is not a record key");
  if (r.v !== 1) return bad("v", r.v, "is not version 1");
  if (typeof r.allocationId !== "string" || r.allocationId.length > 128) {
    return bad("allocationId", r.allocationId, "is not a string of at most 128 characters");
  }
  if (!Number.isSafeInteger(r.memoryBytes) || r.memoryBytes % MiB !== 0) {
    return bad("memoryBytes", r.memoryBytes, "is not a whole number of MiB");
  }
  if (r.image !== null && (typeof r.image !== "object" || !["qcow2", "raw"].includes(r.image.format))) {
    return bad("image.format", r.image?.format, "is not qcow2 or raw (cloud-hypervisor boots disk images, not an iso)");
  }
  if (!Array.isArray(r.nics) || !Array.isArray(r.gpus) || !Array.isArray(r.volumes)) {
    return "vm.json nics, gpus and volumes must be lists";
  }
  const plan: DomainPlan = {
    id: r.id,
    allocationId: r.allocationId,
    vcpus: r.vcpus,
    memoryMiB: r.memoryBytes / MiB,
    image: r.image,
    nics: r.nics,
    gpus: r.gpus,
    placement: r.placement,
    seed: true,
    restoredFrom: r.restoredFrom,
  };
  const pp = planProblem(plan);
  if (pp) return bad(pp[0], pp[1], pp[2]);
  if (!p.instanceDir.endsWith(`/${r.id}`)) return bad("id", r.id, `names another instance than ${p.instanceDir}'s`);
  if (!Number.isSafeInteger(r.uid) || r.uid < VMM_UID_BASE || r.uid >= VMM_UID_BASE + VMM_UID_COUNT) {
    return bad("uid", r.uid, "is outside bcd's VMM uids (0x7FFD0000 up)");
  }
  for (const [i, v] of r.volumes.entries()) {
    if (!VOLUME_ID.test(v.id)) return bad(`volumes[${i}].id`, v.id, "is not a volume id");
    if (!SERIAL.test(v.serial)) return bad(`volumes[${i}].serial`, v.serial, "is not a volume serial");
    if (typeof v.readonly !== "boolean") return bad(`volumes[${i}].readonly`, v.readonly, "is not a boolean");
  }
  return configProblem(r, p);
}

function configProblem(r: ChRecord, p: RecordPaths): string | undefined {
  const bad = (field: string, value: unknown, why: string) => `vm.json config.${field} ${JSON.stringify(value)} ${why}`;
  const c = r.config as Record<string, unknown>;
  if (typeof c !== "object" || c === null || Array.isArray(c)) return "vm.json config is not an object";
  for (const k of Object.keys(c)) if (!VM_CONFIG_KEYS.includes(k)) return bad(k, "…", "is not a key bcd writes");
  const pay = c.payload as Record<string, unknown> | undefined;
  if (
    typeof pay !== "object" || pay === null || Object.keys(pay).join() !== "firmware" || pay.firmware !== CH_FIRMWARE
  ) {
    return bad("payload", pay, `is not exactly the firmware ${CH_FIRMWARE}`);
  }
  for (
    const [sec, keys] of [["cpus", [...CPUS_KEYS, "affinity"]], ["memory", MEMORY_KEYS], [
      "platform",
      PLATFORM_KEYS,
    ]] as const
  ) {
    const v = c[sec];
    if (v === undefined) continue;
    if (typeof v !== "object" || v === null) return bad(sec, v, "is not an object");
    for (const k of Object.keys(v)) if (!keys.includes(k)) return bad(`${sec}.${k}`, "…", "is not an allowed key");
  }
  const disks = new Set([`${p.instanceDir}/disk.qcow2`, `${p.instanceDir}/seed.iso`]);
  const vols = new Set(r.volumes.map((v) => volumePath(p.volumesDir, v.id)));
  const dl = c.disks ?? [];
  if (!Array.isArray(dl)) return bad("disks", dl, "is not a list");
  for (const [i, d] of (dl as Record<string, unknown>[]).entries()) {
    const path = d?.path;
    if (typeof path !== "string" || (!disks.has(path) && !vols.has(path))) {
      return bad(`disks[${i}].path`, path, `is outside the instance directory ${p.instanceDir} and its volumes`);
    }
    for (const k of Object.keys(d)) {
      if (!["path", "readonly", "id", "serial", "image_type", "backing_files", "direct", "num_queues"].includes(k)) {
        return bad(`disks[${i}].${k}`, "…", "is not a disk key bcd writes");
      }
    }
    if (d.backing_files === true && path !== `${p.instanceDir}/disk.qcow2`) {
      return bad(`disks[${i}].backing_files`, true, "is on for a disk that is not bcd's overlay");
    }
  }
  const serial = c.serial as Record<string, unknown> | undefined;
  if (
    serial !== undefined &&
    !(serial.mode === "Socket" && serial.socket === `${p.instanceDir}/serial.sock` && Object.keys(serial).length === 2)
  ) {
    return bad("serial", serial, `is not the socket ${p.instanceDir}/serial.sock`);
  }
  const console = c.console as Record<string, unknown> | undefined;
  if (console !== undefined && !(["Off", "Null"].includes(String(console.mode)) && Object.keys(console).length === 1)) {
    return bad("console", console, "is not Off or Null");
  }
  const rng = c.rng as Record<string, unknown> | undefined;
  if (rng !== undefined && !(rng.src === "/dev/urandom" && Object.keys(rng).length === 1)) {
    return bad("rng", rng, "is not /dev/urandom");
  }
  const gpuPaths = new Set(r.gpus.map((g) => sysfsDevice(g.pciBusId)));
  const devs = c.devices ?? [];
  if (!Array.isArray(devs)) return bad("devices", devs, "is not a list");
  for (const [i, d] of (devs as Record<string, unknown>[]).entries()) {
    if (
      typeof d?.path !== "string" || !gpuPaths.has(d.path) || Object.keys(d).some((k) => k !== "path" && k !== "id")
    ) {
      return bad(`devices[${i}]`, d, "is not one of the record's GPUs");
    }
  }
  const b = c.balloon as Record<string, unknown> | undefined;
  if (
    b !== undefined &&
    (typeof b !== "object" ||
      Object.keys(b).some((k) => !["size", "free_page_reporting", "deflate_on_oom"].includes(k)))
  ) {
    return bad("balloon", b, "has a key bcd does not write");
  }
  return undefined;
}

/** The sysfs path cloud-hypervisor takes for a PCI device (`/sys/bus/pci/devices/<domain:bus:slot.fn>/`). */
export function sysfsDevice(pciBusId: string): string {
  const id = pciBusId.toLowerCase();
  // The inventory spells an 8-digit domain (nvidia-smi's 00000000:3B:00.0); sysfs has four.
  const m = /^(?:[0-9a-f]{4})?([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$/.exec(id);
  return `/sys/bus/pci/devices/${m ? m[1] : id}/`;
}

/**
 * Reads `instances/<id>/vm.json` strictly: `undefined` when there is none (the directory is not bcd's), the record
 * when it passes {@link recordProblem} for `paths` and names instance `id`, else {@link ChRecordRefused}.
 */
export async function readRecord(id: string, paths: RecordPaths): Promise<ChRecord | undefined> {
  const file = `${paths.instanceDir}/${RECORD_FILE}`;
  let st: Deno.FileInfo;
  try {
    st = await Deno.lstat(file);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  if (!st.isFile) throw new ChRecordRefused(`${file} is not a regular file`);
  if (st.size > MAX_RECORD_BYTES) throw new ChRecordRefused(`${file} is ${st.size} bytes; at most ${MAX_RECORD_BYTES}`);
  const f = await Deno.open(file, { read: true });
  let text: string;
  try {
    const buf = new Uint8Array(MAX_RECORD_BYTES + 1);
    let n = 0;
    for (let r = await f.read(buf); r !== null && n < buf.length; r = await f.read(buf.subarray(n))) n += r;
    if (n > MAX_RECORD_BYTES) throw new ChRecordRefused(`${file} grew past ${MAX_RECORD_BYTES} bytes while read`);
    text = new TextDecoder("utf-8", { fatal: true }).decode(buf.subarray(0, n));
  } finally {
    f.close();
  }
  let r: ChRecord;
  try {
    r = JSON.parse(text);
  } catch (e) {
    throw new ChRecordRefused(`${file} is not JSON`, { cause: e });
  }
  const why = recordProblem(r, paths);
  if (why) throw new ChRecordRefused(`${file}: ${why}`);
  if (r.id !== id) throw new ChRecordRefused(`${file} names instance ${JSON.stringify(r.id)}, not ${id}`);
  return r;
}

/** Writes the record atomically (a 0600 temp file, fsync, rename); checks it first. */
export async function writeRecord(r: ChRecord, paths: RecordPaths): Promise<void> {
  const why = recordProblem(r, paths);
  if (why) throw new ChRecordRefused(why);
  const file = `${paths.instanceDir}/${RECORD_FILE}`;
  const tmp = `${file}.tmp`;
  const f = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o600 });
  try {
    const b = new TextEncoder().encode(JSON.stringify(r));
    for (let o = 0; o < b.length;) o += await f.write(b.subarray(o));
    await f.sync();
  } finally {
    f.close();
  }
  await Deno.rename(tmp, file);
}
