/**
 * The VMM's transient unit (seed 000 §The cloud-hypervisor unit): a pure function from what the unit needs to know to
 * the `systemd-run` command line, with exactly the seed's property table:
 *
 * | Row | Properties |
 * | --- | --- |
 * | Identity and privileges | `User=`/`Group=` the instance's uid, `CapabilityBoundingSet=`, `AmbientCapabilities=` empty, `NoNewPrivileges=yes`, `LimitMEMLOCK=infinity`, `UMask=0077` (`0007` under `bcd helper`) |
 * | Devices | `DevicePolicy=closed`, `DeviceAllow=/dev/kvm rw`; with GPUs also `/dev/vfio/vfio rw` and `char-vfio rw` |
 * | Files | `ProtectSystem=strict`, `ProtectHome=yes`, `PrivateTmp=yes`, `ProtectProc=invisible`; read-only `TemporaryFileSystem`s over `/run` and `/var`, and over bcd's `instances/` and `images/` when its directory is outside `/var`; `InaccessiblePaths` `/etc/bcd`, `/etc/ssh`, `/etc/libvirt`, `/etc/shadow`, `/etc/gshadow`; the instance directory `BindPaths` + `ReadWritePaths`, the base image `BindReadOnlyPaths` |
 * | Kernel and system | `ProtectKernelTunables`, `ProtectKernelModules`, `ProtectKernelLogs`, `ProtectControlGroups`, `ProtectClock`, `ProtectHostname`, `RestrictSUIDSGID`, `RestrictRealtime`, `RestrictNamespaces`, `LockPersonality`, `SystemCallFilter=~@debug @mount @reboot @swap @module @raw-io @clock @cpu-emulation @obsolete` |
 * | Network | `PrivateNetwork=yes`, `RestrictAddressFamilies=AF_UNIX`, `IPAddressDeny=any` |
 * | Limits from the flavor | `MemoryMax` = memory + memory/32 + 256 MiB, `TasksMax` = 4 per vCPU + 128, `CPUQuota` = (vCPUs + 1) × 100% |
 *
 * Beside the table, from §Placement: `AllowedCPUs` and `AllowedMemoryNodes` from the placement, and `MemoryMax` only
 * the VMM's overhead (memory/32 + 256 MiB) when the guest's memory is in huge pages (which `MemoryMax` does not charge);
 * a restored memory configuration drops huge pages, so it is charged in full. From §Persistent volumes: each volume
 * bound into the unit, read-write or read-only as attached; and (a judgement call for hot-plug) the volume store's
 * directory bound as well, since a running unit's namespace takes no new bind: the ACL entries decide which volumes
 * the VMM's user opens.
 *
 * Judgement calls, written down: the unit name is `bcd-ch-<instance id>.service` and the id is checked against the
 * instance-id pattern first, so it never names another kind of unit or carries a `/`; the VMM's command line is
 * `cloud-hypervisor --api-socket path=<instance dir>/api.sock` (everything else arrives over the API); the unit's
 * `Group=` is the same number as its `User=` (the seed's "`User=` and `Group=` set to it").
 *
 * @module
 */
import { INSTANCE_ID } from "../../core/converge/instances/domain_plan.ts";

/** The first VMM uid (seed: "a uid from `0x7FFD0000` up"). */
export const VMM_UID_BASE = 0x7FFD0000;
/** How many VMM uids bcd hands out (one per instance on the host; a judgement call: 65536). */
export const VMM_UID_COUNT = 0x10000;
/** The slice every VMM unit runs in. */
export const INSTANCES_SLICE = "bcd-instances.slice";
/** The firmware every VM boots. */
export const CH_FIRMWARE = "/usr/share/cloud-hypervisor/CLOUDHV.fd";

const MiB = 1024 * 1024;

/** What the unit is built from. */
export interface UnitInput {
  readonly id: string;
  readonly uid: number;
  /** The runtime's directory (`<data dir>/cloud-hypervisor`). */
  readonly runtimeDir: string;
  readonly vcpus: number;
  readonly memoryBytes: number;
  /** Whether the guest's memory is in huge pages (false for a restored memory configuration, which drops them). */
  readonly hugepages: boolean;
  readonly gpus: boolean;
  /** `placement.cpus` and `placement.mems` (empty: no pinning). */
  readonly allowedCpus: string;
  readonly allowedMems: string;
  /** The base image's path, bound read-only; `null` for a restored disk without one. */
  readonly baseImage: string | null;
  readonly volumes: readonly { readonly path: string; readonly readonly: boolean }[];
  /**
   * The volume store's directory, bound too (`BindPaths=-`, absent: nothing) so that a volume hot-plugged into the
   * running VM (`vm.add-disk`) is there in the unit's mount namespace, which systemd fixes at the launch. The VMM
   * opens only the volumes its user holds an ACL entry on (`vmm_access.ts`): the store is 0700 and each volume 0600.
   */
  readonly volumesDir?: string;
  readonly underHelper: boolean;
  /** The `cloud-hypervisor` binary (root's own under the helper). */
  readonly binary: string;
}

/** The unit's name for instance `id`. */
export function unitName(id: string): string {
  if (!INSTANCE_ID.test(id)) throw new TypeError(`instance id ${JSON.stringify(id)} is not valid`);
  return `bcd-ch-${id}.service`;
}

/** `MemoryMax` in bytes: memory + memory/32 + 256 MiB, only the overhead when the memory is in huge pages. */
export function memoryMax(memoryBytes: number, hugepages: boolean): number {
  const overhead = Math.floor(memoryBytes / 32) + 256 * MiB;
  return hugepages ? overhead : memoryBytes + overhead;
}

/** The properties, one `Key=Value` each, in the table's row order. */
export function unitProperties(u: UnitInput): string[] {
  if (!INSTANCE_ID.test(u.id)) throw new TypeError(`instance id ${JSON.stringify(u.id)} is not valid`);
  if (!Number.isSafeInteger(u.uid) || u.uid < VMM_UID_BASE || u.uid >= VMM_UID_BASE + VMM_UID_COUNT) {
    throw new RangeError(`uid ${u.uid} is outside bcd's VMM range`);
  }
  const inst = `${u.runtimeDir}/instances/${u.id}`;
  const props: string[] = [
    // Identity and privileges
    `User=${u.uid}`,
    `Group=${u.uid}`,
    "CapabilityBoundingSet=",
    "AmbientCapabilities=",
    "NoNewPrivileges=yes",
    "LimitMEMLOCK=infinity",
    `UMask=${u.underHelper ? "0007" : "0077"}`,
    // Devices
    "DevicePolicy=closed",
    "DeviceAllow=/dev/kvm rw",
    ...(u.gpus ? ["DeviceAllow=/dev/vfio/vfio rw", "DeviceAllow=char-vfio rw"] : []),
    // Files
    "ProtectSystem=strict",
    "ProtectHome=yes",
    "PrivateTmp=yes",
    "ProtectProc=invisible",
    "TemporaryFileSystem=/run:ro",
    "TemporaryFileSystem=/var:ro",
    ...(u.runtimeDir === "/var" || u.runtimeDir.startsWith("/var/")
      ? []
      : [`TemporaryFileSystem=${u.runtimeDir}/instances:ro`, `TemporaryFileSystem=${u.runtimeDir}/images:ro`]),
    ...["/etc/bcd", "/etc/ssh", "/etc/libvirt", "/etc/shadow", "/etc/gshadow"].map((p) => `InaccessiblePaths=${p}`),
    `BindPaths=${inst}`,
    `ReadWritePaths=${inst}`,
    ...(u.baseImage ? [`BindReadOnlyPaths=${u.baseImage}`] : []),
    ...(u.volumesDir ? [`BindPaths=-${u.volumesDir}`] : []),
    ...u.volumes.map((v) => `${v.readonly ? "BindReadOnlyPaths" : "BindPaths"}=${v.path}`),
    // Kernel and system
    "ProtectKernelTunables=yes",
    "ProtectKernelModules=yes",
    "ProtectKernelLogs=yes",
    "ProtectControlGroups=yes",
    "ProtectClock=yes",
    "ProtectHostname=yes",
    "RestrictSUIDSGID=yes",
    "RestrictRealtime=yes",
    "RestrictNamespaces=yes",
    "LockPersonality=yes",
    "SystemCallFilter=~@debug @mount @reboot @swap @module @raw-io @clock @cpu-emulation @obsolete",
    // Network
    "PrivateNetwork=yes",
    "RestrictAddressFamilies=AF_UNIX",
    "IPAddressDeny=any",
    // Limits from the flavor
    `MemoryMax=${memoryMax(u.memoryBytes, u.hugepages)}`,
    `TasksMax=${4 * u.vcpus + 128}`,
    `CPUQuota=${(u.vcpus + 1) * 100}%`,
    // Placement
    ...(u.allowedCpus ? [`AllowedCPUs=${u.allowedCpus}`] : []),
    ...(u.allowedMems ? [`AllowedMemoryNodes=${u.allowedMems}`] : []),
  ];
  for (const p of props) {
    if (/[\n\r\0]/.test(p)) throw new TypeError(`unit property ${JSON.stringify(p)} has a control character`);
  }
  return props;
}

/** The whole `systemd-run` argv (without the program name). */
export function systemdRunArgs(u: UnitInput): string[] {
  return [
    `--unit=${unitName(u.id)}`,
    "--collect",
    `--slice=${INSTANCES_SLICE}`,
    ...unitProperties(u).map((p) => `--property=${p}`),
    "--",
    u.binary,
    "--api-socket",
    `path=${u.runtimeDir}/instances/${u.id}/api.sock`,
  ];
}
