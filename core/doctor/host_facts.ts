/**
 * What the root helper tells `doctor` about the host (the helper's `host.doctor` op): the agent role it serves, KVM,
 * huge page sizes, cgroup controllers, the host tools' versions, the instance bridges and the data dir's free space.
 * The unprivileged agent cannot look under /dev, /sys or /proc itself (Deno grants those only to `--allow-all`), nor
 * run these tools; {@link hostChecks} turns the facts into the report's lines.
 *
 * @module
 */
import type { KindRole } from "../commands/kinds.ts";
import { check, type DoctorCheck } from "./report.ts";

/** The host tools the helper looks for (each run with its version flag). */
export const DOCTOR_TOOLS = ["virsh", "cloud-hypervisor", "nft", "sshd"] as const;

/** A host tool. */
export type DoctorTool = typeof DOCTOR_TOOLS[number];

/** The helper's answer. */
export interface HostFacts {
  /** The agent role the helper serves (`[helper] role`). */
  readonly role: KindRole;
  /** Whether QEMU runs a KVM vCPU here (`kvm`) or domains run under TCG (`qemu`), and why. */
  readonly kvm: { readonly type: "kvm" | "qemu"; readonly why: string };
  /** The huge page sizes the kernel offers, KiB, ascending. */
  readonly hugepageSizesKiB: readonly number[];
  /** The cgroup v2 controllers at the holds' cgroup root; `null` when it is no cgroup v2 directory. */
  readonly cgroup: { readonly root: string; readonly controllers: readonly string[] | null };
  /** Each tool's first version line; `null` when it is not installed. */
  readonly tools: Readonly<Record<DoctorTool, string | null>>;
  /** `[helper] instance_bridges`, and those of them the host has no bridge for. */
  readonly instanceBridges: readonly string[];
  readonly missingBridges: readonly string[];
  /** The agent's data dir and the bytes free on its filesystem; `null` when it cannot be measured. */
  readonly dataDir: string;
  readonly dataDirFreeBytes: number | null;
  /** How QEMU reaches libvirt domains' files; absent where the helper runs no `libvirt-kvm`. */
  readonly libvirtOwnership?: LibvirtOwnershipFacts;
}

/**
 * `[helper] libvirt_dynamic_ownership` beside what libvirt's `qemu.conf` says (`runtimes/libvirt/qemu_access.ts`):
 * `qemuConf` is its `dynamic_ownership` (`null`: the file is unreadable; libvirt's default 1 when it sets none),
 * `qemuUser` QEMU's user (its `user`, else Debian's `libvirt-qemu`), `nodeGid` the node's group (`[helper] node_group`,
 * else the data dir's; `null` when neither is known) and `userInGroup` whether QEMU's user is in it (`null` when the
 * user is unknown to the host).
 */
export interface LibvirtOwnershipFacts {
  readonly configured: boolean;
  readonly qemuConf: boolean | null;
  readonly qemuUser: string;
  readonly nodeGid: number | null;
  readonly userInGroup: boolean | null;
}

/** The `libvirt-ownership` line: whether QEMU's user can open the files bcd gives it under this deployment. */
export function libvirtOwnershipCheck(o: LibvirtOwnershipFacts): DoctorCheck {
  const key = `[helper] libvirt_dynamic_ownership = ${o.configured}`;
  if (o.qemuConf === null) {
    return check(
      "libvirt-ownership",
      "warn",
      `${key}, but libvirt's qemu.conf is unreadable: not compared`,
      "make /etc/libvirt/qemu.conf readable by root, or check its dynamic_ownership by hand",
    );
  }
  if (o.qemuConf !== o.configured) {
    return check(
      "libvirt-ownership",
      "fail",
      `${key}, but qemu.conf says dynamic_ownership = ${o.qemuConf ? 1 : 0}: domains fail to open their disks`,
      o.configured
        ? "set libvirt_dynamic_ownership = false under [helper] (the seed's deployment), or dynamic_ownership = 1"
        : "set dynamic_ownership = 0 in /etc/libvirt/qemu.conf and restart libvirtd, or libvirt_dynamic_ownership = true",
    );
  }
  if (o.configured) {
    return check("libvirt-ownership", "ok", "dynamic_ownership = 1: libvirt relabels the domains' files");
  }
  if (o.userInGroup !== true) {
    const group = o.nodeGid === null ? "the node's group" : `the node's group (gid ${o.nodeGid})`;
    return check(
      "libvirt-ownership",
      "fail",
      o.userInGroup === null
        ? `dynamic_ownership = 0, but QEMU's user ${o.qemuUser} is unknown to this host`
        : `dynamic_ownership = 0, but QEMU's user ${o.qemuUser} is not in ${group}: domains fail to open their disks`,
      `adduser ${o.qemuUser} <[helper] node_group> and restart libvirtd`,
    );
  }
  return check(
    "libvirt-ownership",
    "ok",
    `dynamic_ownership = 0: QEMU's user ${o.qemuUser} is in the node's group (gid ${o.nodeGid})`,
  );
}

/** The cgroup controllers a hold slice's limits need (000 §Device assignments: cpuset, memory, hugetlb). */
export const HOLD_CONTROLLERS = ["cpuset", "memory", "hugetlb"] as const;

const GiB = 1024 * 1024 * 1024;
const MiB = 1024 * 1024;

function _bytes(n: number): string {
  return n >= GiB ? `${(n / GiB).toFixed(1)} GiB` : `${(n / MiB).toFixed(1)} MiB`;
}

/** The lines of the host's runtimes: tools, bridges, KVM (the node's, which runs instances). */
export function runtimeChecks(f: HostFacts): DoctorCheck[] {
  const out: DoctorCheck[] = [];
  const virsh = f.tools.virsh;
  const ch = f.tools["cloud-hypervisor"];
  if (virsh === null && ch === null) {
    out.push(check(
      "runtimes",
      "warn",
      "neither virsh nor cloud-hypervisor: this host runs no VPS instances",
      "install libvirt-daemon-system and qemu-system-x86 (or cloud-hypervisor) on a VPS host; a GPU-only host needs neither",
    ));
  } else {
    const names = [virsh !== null ? `virsh ${virsh}` : "", ch !== null ? `cloud-hypervisor ${ch}` : ""];
    out.push(check("runtimes", "ok", names.filter(Boolean).join(", ")));
  }
  if (virsh !== null || ch !== null) {
    if (f.instanceBridges.length === 0) {
      out.push(check(
        "instance-bridges",
        "warn",
        "[helper] instance_bridges is unset: the helper refuses every instance tap",
        'list the bridges instance NICs may join, e.g. instance_bridges = ["br0"] under [helper]',
      ));
    } else if (f.missingBridges.length > 0) {
      out.push(check(
        "instance-bridges",
        "warn",
        `no bridge ${f.missingBridges.join(", ")} on this host (of ${f.instanceBridges.join(", ")})`,
        "create the bridge (ip link add NAME type bridge) or drop it from [helper] instance_bridges",
      ));
    } else out.push(check("instance-bridges", "ok", f.instanceBridges.join(", ")));
    out.push(
      f.kvm.type === "kvm" ? check("kvm", "ok", f.kvm.why) : check(
        "kvm",
        "warn",
        `domains run under TCG, not KVM: ${f.kvm.why}`,
        "enable virtualization in the firmware, load kvm_intel or kvm_amd, and give /dev/kvm to group kvm (0660)",
      ),
    );
  }
  if (virsh !== null && f.libvirtOwnership) out.push(libvirtOwnershipCheck(f.libvirtOwnership));
  return out;
}

/** The lines of the host facts every node needs: huge pages, cgroup controllers, nft, sshd. */
export function hostChecks(f: HostFacts): DoctorCheck[] {
  const out = runtimeChecks(f);
  out.push(
    f.hugepageSizesKiB.length > 0
      ? check(
        "hugepages",
        "ok",
        `sizes ${f.hugepageSizesKiB.map((k) => k >= 1024 * 1024 ? `${k / 1024 / 1024}G` : `${k / 1024}M`).join(", ")}`,
      )
      : check(
        "hugepages",
        "warn",
        "the kernel offers no huge page sizes (/sys/kernel/mm/hugepages is empty)",
        "the hugepages host unit and hold limits with huge pages cannot work on this kernel",
      ),
  );
  if (f.cgroup.controllers === null) {
    out.push(check(
      "cgroup",
      "warn",
      `${f.cgroup.root} is not a cgroup v2 directory (no cgroup.controllers)`,
      "mount cgroup2 there or set [devices] cgroup_root to the cgroup2 mount; hold limits cannot be enforced",
    ));
  } else {
    const missing = HOLD_CONTROLLERS.filter((c) => !f.cgroup.controllers!.includes(c));
    out.push(
      missing.length === 0 ? check("cgroup", "ok", `${f.cgroup.root}: ${f.cgroup.controllers.join(" ")}`) : check(
        "cgroup",
        "warn",
        `${f.cgroup.root} lacks the ${missing.join(", ")} controller${missing.length > 1 ? "s" : ""} (has: ${
          f.cgroup.controllers.join(" ") || "none"
        })`,
        "boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1); hold limits need cpuset, memory and hugetlb",
      ),
    );
  }
  out.push(
    f.tools.nft !== null ? check("nft", "ok", f.tools.nft) : check(
      "nft",
      "warn",
      "nft is not installed: instance network policies cannot load",
      "install nftables; until then Hello advertises neither instance.network-policy nor instance.ssh-host-only",
    ),
  );
  out.push(
    f.tools.sshd !== null ? check("sshd", "ok", f.tools.sshd) : check(
      "sshd",
      "warn",
      "sshd is not installed: the access section's CA and principals cannot be applied",
      "install openssh-server",
    ),
  );
  return out;
}

/** The data dir's free space: fail below the journal's bound, warn below 1 GiB. */
export function diskCheck(f: HostFacts, journalMaxBytes: number): DoctorCheck {
  if (f.dataDirFreeBytes === null) {
    return check(
      "disk",
      "warn",
      `the free space of ${f.dataDir} cannot be measured (does it exist?)`,
      "create the data dir (the package makes /var/lib/bcd, 0750, owned by bcd)",
    );
  }
  const free = f.dataDirFreeBytes;
  if (free < journalMaxBytes) {
    return check(
      "disk",
      "fail",
      `${_bytes(free)} free on ${f.dataDir}, less than the journal's bound (${_bytes(journalMaxBytes)})`,
      "free space on that filesystem; a journal that cannot write stops the daemon",
    );
  }
  if (free < GiB) {
    return check(
      "disk",
      "warn",
      `${_bytes(free)} free on ${f.dataDir}`,
      "images, overlays and snapshots live there too; keep at least 1 GiB free",
    );
  }
  return check("disk", "ok", `${_bytes(free)} free on ${f.dataDir}`);
}
