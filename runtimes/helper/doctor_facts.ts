/**
 * The helper's `host.doctor` backend: what `doctor` needs of the host that only root sees. It reads sysfs (huge page
 * sizes, bridges), the holds' cgroup root (`cgroup.controllers`), asks QEMU whether KVM works (the libvirt runtime's
 * own probe, passed in by the wiring), runs each host tool's version flag (bounded in time; a tool not on `PATH` is `null`) and measures the
 * data dir's free space with `stat -f`. Every path comes from the helper's own configuration.
 *
 * @module
 */
import type { KindRole } from "../../core/commands/kinds.ts";
import {
  DOCTOR_TOOLS,
  type DoctorTool,
  type HostFacts,
  type LibvirtOwnershipFacts,
} from "../../core/doctor/host_facts.ts";
import { toolVersion } from "../doctor/tool_version.ts";

/** The backend the dispatcher calls. */
export interface HostDoctor {
  facts(): Promise<HostFacts>;
}

/** Options of {@link RealHostDoctor}. */
export interface RealHostDoctorOptions {
  readonly role: KindRole;
  readonly dataDir: string;
  readonly cgroupRoot: string;
  readonly bridges: readonly string[];
  /** The sysfs root (default `/sys`). */
  readonly sys?: string;
  /** The KVM probe (the helper's wiring passes the libvirt runtime's `probeDomainType`). */
  readonly kvm: () => Promise<HostFacts["kvm"]>;
  /** How QEMU reaches libvirt domains' files (the libvirt runtime's `libvirtOwnershipFacts`), asked when virsh is there. */
  readonly libvirtOwnership?: () => Promise<LibvirtOwnershipFacts>;
  /** A tool's version run's bound (default 10 s). */
  readonly toolTimeoutMs?: number;
}

/** Each tool's version flag. */
const VERSION_ARGS: Readonly<Record<DoctorTool, readonly string[]>> = {
  virsh: ["--version"],
  "cloud-hypervisor": ["--version"],
  nft: ["--version"],
  sshd: ["-V"],
};

async function _isDir(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return false;
    throw e;
  }
}

/** The huge page sizes under `<sys>/kernel/mm/hugepages` (`hugepages-<n>kB`), KiB, ascending. */
export async function hugepageSizes(sys: string): Promise<number[]> {
  const sizes: number[] = [];
  try {
    for await (const e of Deno.readDir(`${sys}/kernel/mm/hugepages`)) {
      const m = /^hugepages-(\d{1,12})kB$/.exec(e.name);
      if (m) sizes.push(Number(m[1]));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return sizes.sort((a, b) => a - b);
}

/** The bytes free for unprivileged use on the filesystem of `dir` (`stat -f`), `null` when it cannot be measured. */
export async function freeBytes(dir: string): Promise<number | null> {
  if (!(await _isDir(dir))) return null;
  const out = await new Deno.Command("stat", {
    args: ["-f", "-c", "%a %S", dir],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  if (!out.success) return null;
  const m = /^(\d+) (\d+)$/.exec(new TextDecoder().decode(out.stdout).trim());
  return m ? Number(m[1]) * Number(m[2]) : null;
}

/** The real backend. */
export class RealHostDoctor implements HostDoctor {
  constructor(private readonly opts: RealHostDoctorOptions) {}

  async facts(): Promise<HostFacts> {
    const o = this.opts;
    const sys = o.sys ?? "/sys";
    let controllers: string[] | null = null;
    try {
      controllers = (await Deno.readTextFile(`${o.cgroupRoot}/cgroup.controllers`)).trim().split(/\s+/).filter(Boolean);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory)) throw e;
    }
    const tools = Object.fromEntries(
      await Promise.all(DOCTOR_TOOLS.map(async (t) => [t, await toolVersion(t, VERSION_ARGS[t], o.toolTimeoutMs)])),
    ) as Record<DoctorTool, string | null>;
    const missingBridges: string[] = [];
    for (const b of o.bridges) if (!(await _isDir(`${sys}/class/net/${b}/bridge`))) missingBridges.push(b);
    const kvm = tools.virsh !== null || tools["cloud-hypervisor"] !== null
      ? await o.kvm()
      : { type: "qemu" as const, why: "no instance runtime: not probed" };
    return {
      role: o.role,
      kvm,
      hugepageSizesKiB: await hugepageSizes(sys),
      cgroup: { root: o.cgroupRoot, controllers },
      tools,
      instanceBridges: [...o.bridges],
      missingBridges,
      dataDir: o.dataDir,
      dataDirFreeBytes: await freeBytes(o.dataDir),
      ...(tools.virsh !== null && o.libvirtOwnership ? { libvirtOwnership: await o.libvirtOwnership() } : {}),
    };
  }
}
