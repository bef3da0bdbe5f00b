/**
 * The domain XML of a {@link DomainPlan}, rendered by the root side from its own directories: every path is under
 * `<libvirt dir>/instances/<id>/` or `<libvirt dir>/images/`, every device is one of bcd's (a virtio disk on the qcow2
 * overlay with its backing chain spelled out so libvirt never probes it, the base iso and the NoCloud seed as
 * read-only cdroms, the volumes as raw virtio disks on `<data dir>/volumes/<id>.raw` with their serials (read-only
 * when asked; never probed: the format is spelled out), virtio NICs on taps named `tapName(id, i)`, a serial pty logged to `console.log`, managed VFIO
 * hostdevs for GPUs, an explicit memballoon), and nothing else (no `<qemu:commandline>`, no host block device).
 * bcd's ownership mark is the metadata element in namespace {@link BCD_NS}, which carries the plan as JSON and the
 * node that defined the domain (`<bcd:node>`, its node id): a domain another node on the same libvirtd defined is
 * foreign to this one, as is a domain whose mark names no node.
 *
 * The CPU is `host-passthrough` on `kvm`; TCG (`qemu`) cannot pass the host CPU through, so there the element is
 * left out and QEMU's default model runs (a judgement call: the same code runs on hosts without working KVM).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { tapName } from "../../core/converge/instances/tap_name.ts";
import {
  type DomainPlan,
  GUEST_CHANNELS,
  type PlanVolume,
  REBIND_DISK,
} from "../../core/converge/instances/domain_plan.ts";

/** bcd's metadata namespace. */
export const BCD_NS = "https://better-compute.dev/libvirt/1";

/** `kvm` where /dev/kvm works, `qemu` (TCG) elsewhere. */
export type DomainType = "kvm" | "qemu";

/** How often a balloon reports the guest's memory statistics (the balloon loop runs every 30 s). */
export const BALLOON_STATS_PERIOD_S = 10;

/** Where the root side keeps a domain's files. */
export interface DomainPaths {
  /** `<data dir>/libvirt`. */
  readonly libvirtDir: string;
  /** `<data dir>/volumes`, the volume store. */
  readonly volumesDir: string;
}

/** A volume's file: `<data dir>/volumes/<id>.raw`. */
export function volumePath(p: DomainPaths, id: string): string {
  return `${p.volumesDir}/${id}.raw`;
}

/** The `<disk>` of a volume (in the domain XML, and alone for a live attach). */
export function renderVolumeDisk(p: DomainPaths, v: PlanVolume, indent = "    "): string {
  const e = xmlEscape;
  return [
    `${indent}<disk type='file' device='disk'>`,
    `${indent}  <driver name='qemu' type='raw'/>`,
    `${indent}  <source file='${e(volumePath(p, v.id))}'/>`,
    `${indent}  <backingStore/>`,
    `${indent}  <target dev='${v.dev}' bus='virtio'/>`,
    `${indent}  <serial>${e(v.serial)}</serial>`,
    ...(v.readOnly ? [`${indent}  <readonly/>`] : []),
    `${indent}</disk>`,
  ].join("\n");
}

/** The identity rebind disk's `<disk>` (000 §Identity rebind): `instances/<id>/rebind.raw` as `vdz`, `bc-rebind`. */
export function renderRebindDisk(p: DomainPaths, id: string): string {
  return [
    `<disk type='file' device='disk'>`,
    `  <driver name='qemu' type='raw'/>`,
    `  <source file='${xmlEscape(`${instanceDir(p, id)}/${REBIND_DISK.file}`)}'/>`,
    `  <backingStore/>`,
    `  <target dev='${REBIND_DISK.dev}' bus='virtio'/>`,
    `  <serial>${REBIND_DISK.serial}</serial>`,
    `</disk>`,
  ].join("\n");
}

/** The instance's directory. */
export function instanceDir(p: DomainPaths, id: string): string {
  return `${p.libvirtDir}/instances/${id}`;
}

/** A base image's path: `images/<sha256>.<format>`. */
export function imagePath(p: DomainPaths, sha256: string, format: string): string {
  return `${p.libvirtDir}/images/${sha256}.${format}`;
}

/**
 * The domain's UUID, derived from the instance id (name-based, RFC 9562 version 8 layout), so a redefinition after a
 * crash or a restart names the same domain libvirt already holds.
 */
export function domainUuid(id: string): string {
  const h = createHash("sha256").update(`bcd-libvirt-domain:${id}`, "utf8").digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** Escapes text for an XML attribute or element. */
export function xmlEscape(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;")
    .replaceAll("'", "&apos;");
}

function _unescape(s: string): string {
  return s.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&apos;", "'")
    .replaceAll("&#34;", '"').replaceAll("&#39;", "'").replaceAll("&amp;", "&");
}

function _pciAddress(busId: string): string {
  const m = /^([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(busId)!;
  return `<address domain='0x${m[1]!.slice(-4)}' bus='0x${m[2]}' slot='0x${m[3]}' function='0x${m[4]}'/>`;
}

/** The domain XML of `plan` (checked by `planProblem` before). */
export function renderDomainXml(plan: DomainPlan, type: DomainType, paths: DomainPaths, node: string): string {
  const dir = instanceDir(paths, plan.id);
  const e = xmlEscape;
  const pl = plan.placement;
  const lines: string[] = [];
  lines.push(`<domain type='${type}'>`);
  lines.push(`  <name>${e(plan.id)}</name>`);
  lines.push(`  <uuid>${domainUuid(plan.id)}</uuid>`);
  lines.push(`  <metadata>`);
  lines.push(`    <bcd:instance xmlns:bcd="${BCD_NS}">`);
  lines.push(`      <bcd:node>${e(node)}</bcd:node>`);
  lines.push(`      <bcd:allocation>${e(plan.allocationId)}</bcd:allocation>`);
  if (plan.image) lines.push(`      <bcd:image sha256="${plan.image.sha256}" format="${plan.image.format}"/>`);
  if (plan.restoredFrom) lines.push(`      <bcd:restored-from sha256="${plan.restoredFrom}"/>`);
  lines.push(`      <bcd:plan>${e(JSON.stringify(plan))}</bcd:plan>`);
  lines.push(`    </bcd:instance>`);
  lines.push(`  </metadata>`);
  lines.push(`  <memory unit='MiB'>${plan.memoryMiB}</memory>`);
  lines.push(`  <currentMemory unit='MiB'>${plan.memoryMiB}</currentMemory>`);
  if (pl && pl.hugepages !== "none") {
    const kib = pl.hugepages === "2M" ? 2048 : 1048576;
    lines.push(`  <memoryBacking><hugepages><page size='${kib}' unit='KiB'/></hugepages><locked/></memoryBacking>`);
  }
  const pinned = pl !== null && _expand(pl.cpus).length === plan.vcpus;
  lines.push(`  <vcpu placement='static'${pl && !pinned ? ` cpuset='${pl.cpus}'` : ""}>${plan.vcpus}</vcpu>`);
  if (pl && pinned) {
    const cpus = _expand(pl.cpus);
    lines.push(`  <cputune>`);
    for (let v = 0; v < plan.vcpus; v++) lines.push(`    <vcpupin vcpu='${v}' cpuset='${cpus[v]}'/>`);
    lines.push(`  </cputune>`);
  }
  if (pl && pl.mems !== "") lines.push(`  <numatune><memory mode='strict' nodeset='${pl.mems}'/></numatune>`);
  lines.push(`  <os><type arch='x86_64'>hvm</type></os>`);
  lines.push(`  <features><acpi/><apic/></features>`);
  if (type === "kvm") lines.push(`  <cpu mode='host-passthrough' check='none'/>`);
  lines.push(`  <on_poweroff>destroy</on_poweroff>`);
  lines.push(`  <on_reboot>restart</on_reboot>`);
  lines.push(`  <on_crash>destroy</on_crash>`);
  lines.push(`  <devices>`);
  // The root disk: the overlay, with its backing chain spelled out (an empty <backingStore/> ends it).
  lines.push(`    <disk type='file' device='disk'>`);
  lines.push(`      <driver name='qemu' type='qcow2'/>`);
  lines.push(`      <source file='${e(`${dir}/disk.qcow2`)}'/>`);
  if (plan.image && plan.image.format !== "iso") {
    lines.push(`      <backingStore type='file'>`);
    lines.push(`        <format type='${plan.image.format}'/>`);
    lines.push(`        <source file='${e(imagePath(paths, plan.image.sha256, plan.image.format))}'/>`);
    lines.push(`        <backingStore/>`);
    lines.push(`      </backingStore>`);
  } else {
    lines.push(`      <backingStore/>`);
  }
  lines.push(`      <target dev='vda' bus='virtio'/>`);
  lines.push(`      <boot order='${plan.image?.format === "iso" ? 2 : 1}'/>`);
  lines.push(`    </disk>`);
  for (const v of plan.volumes ?? []) lines.push(renderVolumeDisk(paths, v));
  if (plan.image?.format === "iso") {
    lines.push(`    <disk type='file' device='cdrom'>`);
    lines.push(`      <driver name='qemu' type='raw'/>`);
    lines.push(`      <source file='${e(imagePath(paths, plan.image.sha256, "iso"))}'/>`);
    lines.push(`      <target dev='hdc' bus='ide'/>`);
    lines.push(`      <readonly/>`);
    lines.push(`      <boot order='1'/>`);
    lines.push(`    </disk>`);
  }
  if (plan.seed) {
    lines.push(`    <disk type='file' device='cdrom'>`);
    lines.push(`      <driver name='qemu' type='raw'/>`);
    lines.push(`      <source file='${e(`${dir}/seed.iso`)}'/>`);
    lines.push(`      <target dev='hdd' bus='ide'/>`);
    lines.push(`      <readonly/>`);
    lines.push(`    </disk>`);
  }
  for (const [i, n] of plan.nics.entries()) {
    lines.push(`    <interface type='bridge'>`);
    lines.push(`      <mac address='${n.mac.toLowerCase()}'/>`);
    lines.push(`      <source bridge='${e(n.bridge)}'/>`);
    lines.push(`      <target dev='${tapName(plan.id, i)}'/>`);
    lines.push(`      <model type='virtio'/>`);
    lines.push(`    </interface>`);
  }
  for (const g of plan.gpus) {
    lines.push(`    <hostdev mode='subsystem' type='pci' managed='yes'>`);
    lines.push(`      <source>${_pciAddress(g.pciBusId)}</source>`);
    lines.push(`    </hostdev>`);
  }
  lines.push(`    <serial type='pty'>`);
  lines.push(`      <log file='${e(`${dir}/console.log`)}' append='off'/>`);
  lines.push(`      <target port='0'/>`);
  lines.push(`    </serial>`);
  lines.push(`    <console type='pty'><target type='serial' port='0'/></console>`);
  // The guest channels (`GUEST_CHANNELS`): QEMU binds each socket; the helper hands it to the node after the start.
  lines.push(`    <controller type='virtio-serial' index='0'/>`);
  for (const c of GUEST_CHANNELS) {
    lines.push(`    <channel type='unix'>`);
    lines.push(`      <source mode='bind' path='${e(`${dir}/${c.socket}`)}'/>`);
    lines.push(`      <target type='virtio' name='${c.name}'/>`);
    lines.push(`    </channel>`);
  }
  // A balloon reports the guest's memory statistics every BALLOON_STATS_PERIOD_S: the balloon loop's usage reading.
  if (pl?.balloon) {
    lines.push(`    <memballoon model='virtio'><stats period='${BALLOON_STATS_PERIOD_S}'/></memballoon>`);
  } else lines.push(`    <memballoon model='none'/>`);
  lines.push(`  </devices>`);
  lines.push(`</domain>`);
  return lines.join("\n") + "\n";
}

function _expand(list: string): number[] {
  const out: number[] = [];
  for (const part of list.split(",")) {
    const [a, b] = part.split("-").map(Number) as [number, number | undefined];
    for (let c = a; c <= (b ?? a); c++) out.push(c);
  }
  return out;
}

/** The most bytes of `<bcd:plan>` read back (a plan with every field at its bound fits). */
export const MAX_PLAN_JSON = 64 * 1024;

/** bcd's mark read back: the plan and the node that defined the domain. */
export interface DomainMark {
  readonly plan: DomainPlan;
  readonly node: string;
}

/** Node ids a mark may carry (the gateway's ids: no markup, no whitespace). */
export const NODE_ID = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

/**
 * bcd's mark in a domain's metadata, or `undefined` for a domain without it (not bcd's). A malformed mark, or one that
 * names no node, is `undefined` too: such a domain is unmanaged and never touched.
 */
export function readMark(xml: string): DomainMark | undefined {
  const ns = /xmlns:([A-Za-z_][\w.-]*)=["']https:\/\/better-compute\.dev\/libvirt\/1["']/.exec(xml);
  if (!ns) return undefined;
  const p = ns[1]!;
  const m = new RegExp(`<${p}:plan>([^<]{1,${MAX_PLAN_JSON}})</${p}:plan>`).exec(xml);
  const n = new RegExp(`<${p}:node>([^<]{1,256})</${p}:node>`).exec(xml);
  if (!m || !n) return undefined;
  const node = _unescape(n[1]!);
  if (!NODE_ID.test(node)) return undefined;
  try {
    const v = JSON.parse(_unescape(m[1]!)) as DomainPlan;
    return typeof v === "object" && v !== null && typeof v.id === "string" ? { plan: v, node } : undefined;
  } catch (e) {
    if (e instanceof SyntaxError) return undefined;
    throw e;
  }
}
