/**
 * Each executable's permission flags: the single source for the `deno.json` tasks, `make bundle` and `make compile`.
 * A role never holds a permission it does not use; `permissions_test.ts` proves the tasks match this table and
 * that what a role must not do is refused.
 *
 * Deno 2.9 refuses every access below `/proc`, `/sys` and `/dev` to anything short of `--allow-all`, whatever
 * `--allow-read`/`--allow-write` name (denoland/deno#27564, #34393; `permissions_test.ts` proves the rule). So the host
 * agents are privilege-separated as the seed describes for the node (000 §privilege separation): `node`, `site` and
 * `ramdisk` run scoped — their data dir, `/etc/bcd` read, the helper's socket, the network, and only the tools a wired
 * handler runs — and ask the root `bcd-helper` over that socket for everything under /proc, /sys and /dev and every
 * root-only write. The node asks for the boot id, the inventory, host memory, GPUs' NUMA nodes, CDI specs, env files,
 * hold slices, `gpu.reset` and `node.reboot` (and runs `nvidia-smi` itself for queries); the site for the boot id, the
 * inventory and `node.reboot`; the ramdisk for the boot id, the inventory, GPUs' NUMA nodes, `disk.wipe*`,
 * `disk.deploy` (root resolves the disk from its by-id name, fetches the image and writes; its data dir `/run/bcd`
 * holds the default socket) and `kexec.*`. The site runs `genisoimage`, `mkfs.fat`, `mmd` and `mcopy` (a lease's
 * virtual-media ISO and its UEFI boot image, into its own cache) and nothing else; the ramdisk runs `nvidia-smi` for
 * `diag.nvml`'s query, as the node does, and nothing else; the BMC kinds bring their tools (or their helper ops) with
 * them. The helper holds
 * `--allow-all` for the same Deno
 * rule: it reads /proc and /sys and writes cgroupfs; its containment is that it answers only the ops of `core/helper`
 * that the role it serves uses (`[helper] role`), each checked default-deny.
 *
 * `guest` and `sim` are scoped too: the guest reads everything and runs tenant programs but no host tool, the sim
 * simulates its hardware under its own directories.
 *
 * Tools that judge a file the user names (`bcd-node image check FILE`, `image check-overlay FILE`) or install into a
 * directory the user names (`bcd-guest bundle install --root DIR`) need access to exactly those paths, which no
 * static grant can name. {@link ARG_GRANTS} lists them; the launcher (`roles/launch.ts`) reads the subcommand line,
 * adds `--allow-read=`/`--allow-write=` of exactly the named paths ({@link argGrants}) to the role's flags and runs
 * the role with them. Every way to run a role goes through it for these subcommands: the `deno.json` task of a role
 * with argument grants runs the launcher ({@link roleTask}), and the bundled `dist/bcd-<role>/bcd-<role>` hands those
 * subcommands to its bundled launcher (`roles/build.ts`). A compiled `bin/bcd-<role>` cannot take a grant per run
 * (`deno compile` bakes its flags), so `make compile` builds it from the same table with the base flags only and its
 * argument-granted subcommands refuse, naming the missing grant, rather than fail on a raw permission error
 * (`roles/_cli.ts` checks the grant before the subcommand runs). The launcher itself holds only `--allow-run` of the
 * Deno that runs the role and `--allow-env=INIT_CWD` (a `deno task` runs in the repository; the role runs in the
 * directory the task was started from, so relative paths mean what the user meant).
 *
 * @module
 */
import type { Role } from "../core/commands/kinds.ts";
import { DEFAULT_HELPER_SOCKET } from "../core/helper/protocol.ts";
import { ARG_GRANTS } from "./arg_grants.ts";

import { type Executable, EXECUTABLES } from "./executables.ts";
export { type Executable, EXECUTABLES };

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

const ROOT_HELPER =
  "the root helper reads /proc and /sys and writes cgroupfs for the agents: Deno grants those only to --allow-all";

const ENV = ["BCD_LOG_LEVEL", "BCD_CONFIG", "BCD_DATA_DIR", "BCD_BOOT_ID_PATH"];
/** Seed 001's wrap-mode variables, read by `guest turns`. */
const SLEEPWALK_ENV = [
  "SLEEPWALK_WRAP_CMD",
  "SLEEPWALK_WRAP_START",
  "SLEEPWALK_WRAP_END",
  "SLEEPWALK_WRAP_AWAIT_SECRETS",
];
/**
 * The variables the OTLP/HTTP exporter reads when it is built (`@opentelemetry/exporter-metrics-otlp-http`: endpoint,
 * headers, timeout, compression, certificates, temporality; generic and metrics-specific). bcd sets none of them and
 * passes its configuration explicitly; without the grant the exporter cannot be constructed.
 */
const OTEL_ENV = [
  ...["ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"].flatMap((
    k,
  ) => [`OTEL_EXPORTER_OTLP_${k}`, `OTEL_EXPORTER_OTLP_METRICS_${k}`]),
  "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
];
/** The daemon roles' env: NODE_V8_COVERAGE because pino's thread-stream reads it when core/log loads. */
const DAEMON_ENV = [...ENV, "NODE_V8_COVERAGE", ...OTEL_ENV];
const SYS = ["hostname", "osRelease", "systemMemoryInfo", "cpus", "networkInterfaces", "loadavg"];

/** The table. Paths are absolute; tests that need temp roots add theirs with {@link roleFlags}'s `extraWrite`. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, RolePermissions>> = {
  node: {
    // Privilege-separated: /proc, /sys, /dev and root-only writes go through the helper's socket. /run/nvidia-mps is
    // read for whether MPS runs (a slot hold's CUDA_MPS_PIPE_DIRECTORY); nvidia-smi runs here for queries only.
    // setfacl grants a cloud-hypervisor VMM's user ACL entries on its instance's directory in the data dir.
    // qemu-img, genisoimage and xorriso build the libvirt-kvm runtime's overlays and seed ISOs in the data dir; every
    // libvirt verb goes through the helper (libvirt.*), so virsh stays denied here. The volume store
    // (<data dir>/volumes) is the node's: fallocate punches a destroyed volume's blocks out, and statfs of the data
    // dir is the space rule's figures (000 §Persistent volumes).
    read: ["/var/lib/bcd", "/etc/bcd", "/run/nvidia-mps", DEFAULT_HELPER_SOCKET],
    write: ["/var/lib/bcd", DEFAULT_HELPER_SOCKET],
    run: ["nvidia-smi", "qemu-img", "genisoimage", "xorriso", "fallocate", "setfacl"],
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    // The hostname for Hello; the host's addresses on the instances' bridges, which exec tunnels dial from; the
    // inventory's interfaces and memory come from the helper. statfs: the volume store's space rule.
    sys: ["hostname", "networkInterfaces", "statfs"],
  },
  site: {
    // Privilege-separated like the node: the boot id, the inventory and node.reboot go through the helper's socket.
    // boot.prepareRamdisk builds its virtual-media ISO with genisoimage from Debian's ISOLINUX files and a FAT image
    // holding systemd-boot (mkfs.fat, mtools' mmd and mcopy), into its own image cache (no host effect: the node
    // builds its seed ISO the same way). The list is runtimes/site/ramdisk_iso.ts's ISO_TOOLS.
    read: [
      "/var/lib/bcd-site",
      "/etc/bcd",
      DEFAULT_HELPER_SOCKET,
      "/usr/lib/ISOLINUX",
      "/usr/lib/syslinux",
      "/usr/lib/systemd/boot/efi",
    ],
    write: ["/var/lib/bcd-site", DEFAULT_HELPER_SOCKET],
    run: ["genisoimage", "mkfs.fat", "mmd", "mcopy"],
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    // The hostname for Hello; the inventory comes from the helper.
    sys: ["hostname"],
  },
  ramdisk: {
    // Privilege-separated: the boot id and the inventory go through the helper. /run/bcd holds the data dir and the
    // default socket (/run/bcd/helper.sock), so the socket needs no entry of its own.
    read: ["/run/bcd", "/etc/bcd"],
    write: ["/run/bcd"],
    run: ["nvidia-smi"], // diag.nvml's query (the node's GPU tool); everything else is the helper's
    denyRun: [],
    net: "all",
    env: DAEMON_ENV,
    sys: ["hostname"],
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
    // uid: the worker runs its executions as nobody when it is root (seed 004 §(c)).
    sys: ["hostname", "osRelease", "systemMemoryInfo", "cpus", "uid"],
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

/** The agents' root helper: every op under /proc, /sys, /dev and root-only writes (see the module doc). */
export const HELPER_PERMISSIONS: RolePermissions = {
  read: ["/etc/bcd", "/etc/cdi", "/run/bcd", "/proc", "/sys", "/etc/os-release", "/etc/group"],
  write: ["/etc/cdi", "/run/bcd", "/sys/fs/cgroup"],
  run: ["nvidia-smi", "systemctl", "reboot"],
  denyRun: [],
  net: "none",
  env: DAEMON_ENV,
  sys: ["hostname", "osRelease", "networkInterfaces"],
  allowAll: ROOT_HELPER,
};

/**
 * `bcd-vm`, the guest agent's host program (seed 002 §Commands): an operator's tool, not a daemon. It opens the image
 * and store paths its command line names, reads `/proc/<pid>/stat` for the VMM's verified identity and hands the
 * checked images' descriptors to the hypervisor it runs; Deno grants /proc only to --allow-all.
 */
export const VM_PERMISSIONS: RolePermissions = {
  read: "all",
  write: [],
  run: ["qemu-system-x86_64"],
  denyRun: [],
  net: "none",
  env: [],
  sys: [],
  allowAll:
    "the guest agent's host program reads /proc/<pid>/stat of the VMM it reattaches to and opens the image and " +
    "store paths its command line names: Deno grants /proc only to --allow-all",
};

/** The permission entry of an executable. */
export function permissionsOf(name: Executable): RolePermissions {
  if (name === "helper") return HELPER_PERMISSIONS;
  if (name === "vm") return VM_PERMISSIONS;
  return ROLE_PERMISSIONS[name];
}

export { type ArgGrant, argGrantOf, argGrants, type Grants } from "./arg_grants.ts";
export { ARG_GRANTS };

/** Options for {@link roleFlags}. */
export interface RoleFlagOptions {
  /** More writable (and readable) directories, e.g. a test's temp root. */
  readonly extraWrite?: readonly string[];
  /** More programs the role may run, e.g. a test's fake tool. */
  readonly extraRun?: readonly string[];
  /** More readable paths, e.g. the file an argument-granted subcommand judges. */
  readonly extraRead?: readonly string[];
}

/**
 * The V8 flags of the agent daemons (node, site, ramdisk, sim): a young generation of 8 MiB semi-spaces from the start,
 * and no Sparkplug (V8's baseline compiler).
 *
 * Before its first `Hello` an agent allocates about 5 MB of objects it keeps (its modules' tables, journal, session,
 * engine), and V8's initial 1 MiB semi-spaces made it copy them in one scavenge, 4.6-7.6 ms of the sim's start
 * (`--trace-gc`); with these it reaches `Hello` without a collection, at the same RSS then and 4 s later (issue 24).
 *
 * Sparkplug compiles a function to machine code once it has run 8 times, a tier for pages that must be quick in
 * their first second; a daemon's start runs hundreds of functions just past that count and never again, and its hot
 * paths reach Maglev and Turbofan whatever the tier below. Without it (measured 2026-12-03, 21 interleaved rounds, one
 * run each): the shipped sim's CPU to `Hello` 105.5 -> 101.7 ms, the node's 122.8 -> 115.3 ms; `bench:commands`' event
 * loop CPU per command 141-149 µs with and without, and the idle converge pass's median 2.7-3.1 ms either way.
 *
 * They are part of {@link roleFlags}, so every path that runs a role (its launcher, `launch.js`, `deno compile`, the
 * tasks, `warm-cache`) runs it alike: V8 refuses a code cache made under other flags (`--no-sparkplug` counts, the
 * semi-space size does not), so the cache `warm-cache` writes is the one the role's runs read.
 */
export const DAEMON_V8_FLAGS: readonly string[] = ["--v8-flags=--min-semi-space-size=8,--no-sparkplug"];
const _DAEMONS: ReadonlySet<Executable> = new Set(["node", "site", "ramdisk", "sim"]);

/** The `deno run` / `deno compile` flags of `role` (permissions, and the daemons' V8 flags), in a stable order. */
export function roleFlags(role: Executable, opts: RoleFlagOptions = {}): string[] {
  const p = permissionsOf(role);
  const extra = opts.extraWrite ?? [];
  const flags: string[] = ["--quiet", "--no-prompt"];
  if (p.allowAll !== undefined) return [...flags, "--allow-all"];
  if (_DAEMONS.has(role)) flags.push(...DAEMON_V8_FLAGS);
  if (p.read === "all") flags.push("--allow-read");
  else flags.push(`--allow-read=${[...p.read, ...extra, ...(opts.extraRead ?? [])].join(",")}`);
  if (p.write.length + extra.length > 0) flags.push(`--allow-write=${[...p.write, ...extra].join(",")}`);
  const run = p.run === "all" ? "all" : [...p.run, ...(opts.extraRun ?? [])];
  if (run === "all") flags.push("--allow-run");
  else if (run.length > 0) flags.push(`--allow-run=${run.join(",")}`);
  if (p.denyRun.length > 0) flags.push(`--deny-run=${p.denyRun.join(",")}`);
  if (p.net === "all") flags.push("--allow-net");
  if (p.env.length > 0) flags.push(`--allow-env=${p.env.join(",")}`);
  if (p.sys.length > 0) flags.push(`--allow-sys=${p.sys.join(",")}`);
  return flags;
}

/** The entry file of an executable, relative to the repository root. */
export function roleEntry(role: Executable): string {
  return `roles/${role}.ts`;
}

/** The launcher's own flags: it only runs the Deno that runs the role (`deno` on PATH from source). */
export function launcherFlags(deno: string): string[] {
  return ["--quiet", "--no-prompt", `--allow-run=${deno}`, "--allow-env=INIT_CWD"];
}

/** The launcher's entry file, relative to the repository root. */
export const LAUNCHER_ENTRY = "roles/launch.ts";

/**
 * The `deno.json` task line of an executable: its role run directly with its flags, or, for one with argument grants,
 * the launcher that adds them per run.
 */
export function roleTask(role: Executable): string {
  if (ARG_GRANTS[role].length > 0) return ["deno run", ...launcherFlags("deno"), LAUNCHER_ENTRY, role].join(" ");
  return ["deno run", ...roleFlags(role), roleEntry(role)].join(" ");
}
