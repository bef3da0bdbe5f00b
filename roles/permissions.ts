/**
 * Each role's permission flags: the single source for the `deno.json` tasks, `make bundle` and `make compile`.
 * A role never holds a permission it does not use; `permissions_test.ts` proves the tasks match this table and
 * that what a role must not do is refused.
 *
 * The host daemons (`node`, `site`, `ramdisk`) run with `--allow-all`. Deno 2.9 refuses every access below `/proc`,
 * `/sys` and `/dev` to anything short of `--allow-all`, whatever `--allow-read`/`--allow-write` name
 * (denoland/deno#27564, #34393), and a host daemon cannot work without them: the boot id
 * (`/proc/sys/kernel/random/boot_id`) that decides crash recovery, `/proc/meminfo` for host admission, sysfs for the
 * inventory, cgroupfs for the hold slices, block devices for `disk.wipe`. Their entries below still list what each
 * touches; the containment that scoped flags cannot give them is the seed's privilege separation (an unprivileged
 * daemon beside a root `bcd helper`), not built yet. `guest` and `sim` stay scoped.
 *
 * @module
 */
import type { Role } from "../core/commands/kinds.ts";

/** Host tools no role but `node` may run (the guest runs tenant programs, never these). */
export const HOST_TOOLS: readonly string[] = [
  "virsh",
  "qemu-img",
  "nft",
  "nvidia-smi",
  "systemctl",
  "cloud-hypervisor",
  "ip",
];

/** The directories each role owns and the rest of its grant. */
export interface RolePermissions {
  readonly read: readonly string[] | "all";
  readonly write: readonly string[];
  /** Programs the role may run; `"all"` with `denyRun` for the guest, which runs tenant programs. */
  readonly run: readonly string[] | "all";
  readonly denyRun: readonly string[];
  /** Network: `"all"` for roles that reach a gateway and presigned upload URLs, and for the guest's TCP drain channel. */
  readonly net: "all" | "none";
  readonly env: readonly string[];
  readonly sys: readonly string[];
  /** Why the role runs with `--allow-all` instead of the scoped grant above, when it must. */
  readonly allowAll?: string;
}

const HOST_DAEMON =
  "a host daemon reads /proc and /sys (and writes cgroupfs, /dev): Deno grants those only to --allow-all";

const ENV = ["BCD_LOG_LEVEL", "BCD_CONFIG", "BCD_DATA_DIR", "BCD_BOOT_ID_PATH"];
/** Seed 001's wrap-mode variables, read by `guest turns`. */
const SLEEPWALK_ENV = [
  "SLEEPWALK_WRAP_CMD",
  "SLEEPWALK_WRAP_START",
  "SLEEPWALK_WRAP_END",
  "SLEEPWALK_WRAP_AWAIT_SECRETS",
];
/** The daemon roles' env: NODE_V8_COVERAGE because pino's thread-stream reads it when core/log loads. */
const DAEMON_ENV = [...ENV, "NODE_V8_COVERAGE"];
const SYS = ["hostname", "osRelease", "systemMemoryInfo", "cpus", "networkInterfaces", "loadavg"];

/** The table. Paths are absolute; tests that need temp roots add theirs with {@link roleFlags}'s `extraWrite`. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, RolePermissions>> = {
  node: {
    read: [
      "/var/lib/bcd",
      "/etc/bcd",
      "/etc/cdi",
      "/run/bcd",
      "/run/nvidia-mps",
      "/run/systemd/system",
      "/proc",
      "/sys",
      "/dev",
    ],
    write: ["/var/lib/bcd", "/etc/cdi", "/run/bcd", "/sys/fs/cgroup"],
    run: [...HOST_TOOLS, "ssh-keygen", "sshd"],
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    sys: SYS,
    allowAll: HOST_DAEMON,
  },
  site: {
    read: ["/var/lib/bcd-site", "/etc/bcd", "/proc", "/sys"],
    write: ["/var/lib/bcd-site"],
    run: ["systemctl", "reboot"],
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    sys: SYS,
    allowAll: HOST_DAEMON,
  },
  ramdisk: {
    read: ["/run/bcd", "/etc/bcd", "/proc", "/sys", "/dev"],
    write: ["/run/bcd", "/dev"],
    run: ["qemu-img", "nvidia-smi", "dcgmi", "blkdiscard", "kexec", "reboot"],
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    sys: SYS,
    allowAll: HOST_DAEMON,
  },
  guest: {
    read: "all",
    write: ["/run/bcd-guest", "/dev", "/proc/sysrq-trigger"],
    run: "all",
    denyRun: HOST_TOOLS,
    // `guest turns --tcp` listens on the guest network (seed 001's drain channel); Deno cannot grant listen-only.
    net: "all",
    // NODE_V8_COVERAGE: pino's thread-stream reads it when core/log loads; without it the role cannot start.
    env: [...ENV, "BCD_GUEST_ROOT", "NODE_V8_COVERAGE", ...SLEEPWALK_ENV],
    sys: ["hostname", "osRelease", "systemMemoryInfo", "cpus"],
  },
  sim: {
    read: ["/var/lib/bcd-sim", "/tmp/bcd-sim", "/etc/bcd"],
    write: ["/var/lib/bcd-sim", "/tmp/bcd-sim"],
    run: [],
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    sys: SYS,
  },
};

/** Options for {@link roleFlags}. */
export interface RoleFlagOptions {
  /** More writable (and readable) directories, e.g. a test's temp root. */
  readonly extraWrite?: readonly string[];
}

/** The `deno run` / `deno compile` permission flags of `role`, in a stable order. */
export function roleFlags(role: Role, opts: RoleFlagOptions = {}): string[] {
  const p = ROLE_PERMISSIONS[role];
  const extra = opts.extraWrite ?? [];
  const flags: string[] = ["--quiet", "--no-prompt"];
  if (p.allowAll !== undefined) return [...flags, "--allow-all"];
  if (p.read === "all") flags.push("--allow-read");
  else flags.push(`--allow-read=${[...p.read, ...extra].join(",")}`);
  if (p.write.length + extra.length > 0) flags.push(`--allow-write=${[...p.write, ...extra].join(",")}`);
  if (p.run === "all") flags.push("--allow-run");
  else if (p.run.length > 0) flags.push(`--allow-run=${p.run.join(",")}`);
  if (p.denyRun.length > 0) flags.push(`--deny-run=${p.denyRun.join(",")}`);
  if (p.net === "all") flags.push("--allow-net");
  if (p.env.length > 0) flags.push(`--allow-env=${p.env.join(",")}`);
  if (p.sys.length > 0) flags.push(`--allow-sys=${p.sys.join(",")}`);
  return flags;
}

/** The entry file of a role, relative to the repository root. */
export function roleEntry(role: Role): string {
  return `roles/${role}.ts`;
}

/** The `deno.json` task line of a role. */
export function roleTask(role: Role): string {
  return ["deno run", ...roleFlags(role), roleEntry(role)].join(" ");
}
