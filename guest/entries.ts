/**
 * The entries probe (seed 002 §Root-profile entries): the worker copies the tools the entry and its executions run
 * into the root ({@link copyEntryTools}: static BusyBox, util-linux `setpriv`, its libraries and loader, in
 * `/.runtime-adapter-guest/`), then runs its helper, `bcd-guest entries ROOT CGROUP`, in a mount namespace of its
 * own ({@link probeEntries}), so that the runtime's bind of a generated machine ID ends with the helper; there a
 * bind of `/` is moved over `/` first, since `pivot_root` refuses the initramfs's rootfs as the root it moves away. The helper
 * ({@link runEntries}) checks the entry's refusals, then launches each case through the entry (`entry_scripts.ts`)
 * with a descriptor of the guest's own `/` leaked to it (no close-on-exec), each in its directory below
 * `/tmp/runtime-adapter-entries` in the root, and reports what each execution saw as `CASE.KEY`.
 *
 * Not covered (said in the facts' absence and the closing note): the time status of a guest time daemon (bcd's
 * guest runs none, so nothing is published at `/run/nvx/time`), and the nested-chroot escape, which BusyBox's
 * `chroot` cannot attempt (it enters the new root's `/` at once).
 *
 * @module
 */
import { join } from "../core/util/path.ts";
import type { Facts } from "../core/framing/mod.ts";
import {
  ALLOWED_CAPABILITIES,
  CAPABILITY_BITS,
  capabilityName,
  checkEntry,
  type EntryIdentity,
  EntryRefused,
  passwdUids,
  PUBLISHED_REFUSED,
  setprivArgs,
} from "./entry.ts";
import { ENTER, ENTRY_FAILED, ENTRY_REFUSED, INSIDE, LOADER, TOOLS_DIR } from "./entry_scripts.ts";
import { parseMountInfo } from "./proc/mountinfo.ts";
import { ProbeProblem } from "./root_errors.ts";

type FactList = [string, string][];

/** Where the cases' directories lie, in the root. */
export const ENTRIES_DIR = "tmp/runtime-adapter-entries";
/** The descriptor of the guest's `/` that the helper leaks to each execution. */
export const LEAKED_FD = 7;
/** The hostname of the generated case. */
export const GENERATED_HOSTNAME = "runtime-adapter";

/** A case of the probe. */
export interface EntryCase {
  readonly name: string;
  readonly identity: EntryIdentity;
  /** The working directory it names, in the root ({} for its own directory). */
  readonly workdir?: string | { readonly own: true };
  /** A symbolic link `link` in its directory to this target, created before it launches. */
  readonly link?: string;
}

const rootId = (capabilities: readonly string[], published = false): EntryIdentity => ({
  uid: 0,
  gid: 0,
  capabilities,
  published,
  accounts: "numeric",
});

/** The cases before the runtime's binds, in the seed's order. */
export function entryCases(): EntryCase[] {
  const every = ALLOWED_CAPABILITIES;
  const cwd = (name: string, workdir: EntryCase["workdir"], link?: string): EntryCase => ({
    name,
    identity: rootId(every),
    workdir,
    link,
  });
  return [
    ...every.map((c) => ({ name: `only-${c.replaceAll("_", "-")}`, identity: rootId([c]) })),
    { name: "none", identity: rootId([]) },
    { name: "published", identity: rootId(every.filter((c) => !PUBLISHED_REFUSED.includes(c)), true) },
    { name: "unpublished", identity: rootId(every) },
    { name: "numeric", identity: { uid: 4242, gid: 4242, capabilities: [], published: false, accounts: "numeric" } },
    cwd("cwd-directory", { own: true }),
    cwd("cwd-leaked", `/proc/self/fd/${LEAKED_FD}`),
    cwd("cwd-self", "/proc/self/cwd"),
    cwd("cwd-root", "/proc/self/root"),
    cwd("cwd-init", "/proc/1/cwd"),
    cwd("cwd-link", "link", "/proc/self/cwd"),
  ];
}

/** The entry's refusals, checked without launching (`hasAccount` reads the root's accounts). */
export function refusalFacts(hasAccount: (uid: number) => boolean): FactList {
  const refused = (id: EntryIdentity): boolean => {
    try {
      checkEntry(id, hasAccount);
      return false;
    } catch (e) {
      if (e instanceof EntryRefused) return true;
      throw e;
    }
  };
  const outcome = (id: EntryIdentity) => refused(id) ? "refused" : "accepted";
  const outside = Array.from({ length: CAPABILITY_BITS }, (_, b) => capabilityName(b))
    .filter((c) => !ALLOWED_CAPABILITIES.includes(c));
  const accepted = outside.filter((c) => !refused(rootId([c])));
  return [
    ["refused.outside", String(outside.length - accepted.length)],
    ["refused.accepted", accepted.length === 0 ? "none" : accepted.join(" ")],
    ["refused.published.net-bind-service", outcome(rootId(["net_bind_service"], true))],
    ["refused.published.net-raw", outcome(rootId(["net_raw"], true))],
    ["refused.non-root", outcome({ ...rootId(["chown"]), uid: 1000, gid: 1000 })],
    ["refused.existing", outcome({ ...rootId([]), uid: 4242, gid: 4242, accounts: "existing" })],
  ];
}

/** How one launch went: the entry's line on standard error, the program's facts, the exit status. */
export interface Launched {
  readonly launch: string;
  readonly status: number;
  readonly facts: FactList;
}

/** Reads a launch's outputs: the entry's refusal or failure, or the program's `KEY=VALUE` lines. */
export function parseLaunch(code: number, stdout: string, stderr: string): Launched {
  const entryLine = stderr.split("\n").find((l) => l.startsWith("bcd-entry: "));
  const facts: FactList = [];
  for (const line of stdout.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) facts.push([line.slice(0, eq), line.slice(eq + 1)]);
  }
  let launch: string;
  if (entryLine !== undefined && (code === ENTRY_REFUSED || code === ENTRY_FAILED)) {
    const text = entryLine.slice("bcd-entry: ".length);
    // "refused ERRNO: why" → "refused ERRNO"; a failure keeps its problem.
    launch = code === ENTRY_REFUSED ? text.replace(/^(refused [A-Z]+):.*$/, "$1") : text;
  } else if (facts.length > 0) {
    launch = "started";
  } else {
    const first = stderr.split("\n").find((l) => l.trim() !== "") ?? `status ${code}`;
    launch = `failed ${first.trim()}`;
  }
  return { launch, status: code, facts };
}

/** Options of {@link runEntries}. */
export interface RunEntriesOptions {
  /** The assembled root. */
  readonly root: string;
  /** The workload cgroup each execution joins ("" for none: tests outside a VM). */
  readonly cgroup: string;
  /** Where the generated machine ID is written, outside the root (default: `entries` beside the root). */
  readonly runtimeDir?: string;
  /** BusyBox on the guest's PATH (default `busybox`). */
  readonly busybox?: string;
}

async function chown(path: string, uid: number): Promise<void> {
  await Deno.chown(path, uid, uid);
}

/** Launches `c` through the entry; returns its facts, prefixed with its name. */
async function launchCase(o: RunEntriesOptions, c: EntryCase, hostname: string): Promise<Launched> {
  const rel = join(ENTRIES_DIR, c.name);
  const dir = join(o.root, rel);
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  await chown(dir, c.identity.uid);
  await Deno.writeTextFile(join(dir, "owned"), "owned by user ID 1000\n", { mode: 0o644 });
  await chown(join(dir, "owned"), 1000);
  if (c.link !== undefined) await Deno.symlink(c.link, join(dir, "link"));
  const inRoot = `/${rel}`;
  const workdir = c.workdir === undefined
    ? ""
    : typeof c.workdir === "string"
    ? (c.workdir.startsWith("/") ? c.workdir : `${inRoot}/${c.workdir}`)
    : inRoot;
  const bb = o.busybox ?? "busybox";
  const entryArgs = [
    ...["unshare", "--mount", "--pid", "--uts", "--fork", "--propagation", "private", "--"],
    ...[join(o.root, TOOLS_DIR, "busybox"), "sh", "-c", ENTER, "entry", o.root, o.cgroup, hostname, workdir],
    ...setprivArgs(c.identity),
    ...["--", `/${TOOLS_DIR}/busybox`, "sh", "-c", INSIDE, "inside", inRoot, String(LEAKED_FD)],
  ];
  // The caller leaks a descriptor of the guest's own / (a shell redirection: no close-on-exec).
  const out = await new Deno.Command(bb, {
    args: ["sh", "-c", `exec ${LEAKED_FD}</ && exec "$@"`, "leak", bb, ...entryArgs],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return parseLaunch(out.code, dec.decode(out.stdout), dec.decode(out.stderr));
}

function caseFacts(name: string, l: Launched): FactList {
  return [
    [`${name}.launch`, l.launch],
    [`${name}.status`, String(l.status)],
    ...l.facts.map(([k, v]) => [`${name}.${k}`, v] as [string, string]),
  ];
}

function randomMachineId(): string {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function mount(bb: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(bb, { args: ["mount", ...args], stdout: "null", stderr: "piped" }).output();
  if (!out.success) {
    throw new ProbeProblem(`mount ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
}

/**
 * The helper (`entries ROOT CGROUP`, run in a mount namespace of its own): writes the root's own machine ID, checks
 * the refusals, launches each case, then binds a generated machine ID read-only over the root's and launches the
 * generated case. Returns the facts in that order.
 */
export async function runEntries(o: RunEntriesOptions): Promise<FactList> {
  const bb = o.busybox ?? "busybox";
  const facts: FactList = [];
  await Deno.mkdir(join(o.root, "etc"), { recursive: true });
  await Deno.mkdir(join(o.root, "proc"), { recursive: true });
  await Deno.writeTextFile(join(o.root, "etc/machine-id"), randomMachineId() + "\n", { mode: 0o444 });
  let accounts = new Set<number>();
  try {
    accounts = passwdUids(await Deno.readTextFile(join(o.root, "etc/passwd")));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  facts.push(...refusalFacts((uid) => accounts.has(uid)));
  for (const c of entryCases()) facts.push(...caseFacts(c.name, await launchCase(o, c, "")));
  const outcomes = new Set<string>();
  const statuses = new Set<string>();
  for (let fd = 0; fd < 64; fd++) {
    const l = await launchCase(o, {
      name: `cwd-descriptors/${fd}`,
      identity: rootId(ALLOWED_CAPABILITIES),
      workdir: `/proc/self/fd/${fd}`,
    }, "");
    outcomes.add(l.launch);
    statuses.add(String(l.status));
  }
  facts.push(["cwd-descriptors.launch", [...outcomes].sort().join(",")]);
  facts.push(["cwd-descriptors.status", [...statuses].sort().join(",")]);
  // The runtime's binds, in this helper's mount namespace only: they end with it.
  const generated = randomMachineId();
  const runtimeDir = o.runtimeDir ?? join(o.root, "..", "entries");
  await Deno.mkdir(runtimeDir, { recursive: true });
  const source = join(runtimeDir, "machine-id");
  await Deno.writeTextFile(source, generated + "\n", { mode: 0o444 });
  const target = join(o.root, "etc/machine-id");
  await mount(bb, ["--bind", source, target]);
  await mount(bb, ["-o", "remount,bind,ro,nosuid,nodev,noexec", target]);
  facts.push(["generated.source", generated]);
  const g: EntryCase = { name: "generated", identity: rootId(ALLOWED_CAPABILITIES) };
  facts.push(...caseFacts(g.name, await launchCase(o, g, GENERATED_HOSTNAME)));
  return facts;
}

/** The guest's files the entry runs from the root's copy: static BusyBox, setpriv, its libraries and loader. */
export interface EntryTools {
  readonly busybox: string;
  readonly setpriv: string;
  /** The loader, then each library setpriv needs. */
  readonly libraries: readonly string[];
}

/** setpriv's libraries, as its loader lists them (`ld.so --list`). */
export async function setprivLibraries(setpriv: string, loader = `/lib64/${LOADER}`): Promise<string[]> {
  const out = await new Deno.Command(loader, { args: ["--list", setpriv], stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) throw new ProbeProblem(`${loader} --list ${setpriv}: ${new TextDecoder().decode(out.stderr)}`);
  const libs = [loader];
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const m = /=>\s+(\/\S+)/.exec(line);
    if (m) libs.push(m[1]!);
  }
  return libs;
}

/** Copies the tools into `root`'s `/.runtime-adapter-guest/`, by their base names. */
export async function copyEntryTools(root: string, tools: EntryTools): Promise<void> {
  const dir = join(root, TOOLS_DIR);
  await Deno.mkdir(dir, { recursive: true, mode: 0o755 });
  for (const f of [tools.busybox, tools.setpriv, ...tools.libraries]) {
    const dest = join(dir, f.split("/").at(-1)!);
    await Deno.copyFile(await Deno.realPath(f), dest);
    await Deno.chmod(dest, 0o755);
  }
}

/** What {@link probeEntries} needs. */
export interface EntriesContext {
  readonly root: string;
  readonly cgroup: string;
  /** The helper's argv up to its own arguments (`bcd-guest entries`). */
  readonly helper: readonly string[];
  readonly tools: EntryTools;
}

/**
 * The worker's entries probe: copies the tools, runs the helper in a mount namespace of its own, then reports, in
 * the worker's mount namespace, the root's own machine ID and the mounts below the root.
 */
export async function probeEntries(ctx: EntriesContext): Promise<Facts> {
  await copyEntryTools(ctx.root, ctx.tools);
  // pivot_root refuses a root mount without a parent, as the initramfs's rootfs is: the helper's namespace first
  // moves a bind of / over / and enters it, so that its entries can move the root over / and detach the old one.
  const moved = join(ctx.root, "..", "entries", "guest-root");
  await Deno.mkdir(moved, { recursive: true });
  const enter = `bb=$0 d=$1; shift; "$bb" mount --rbind / "$d" && cd "$d" && "$bb" mount --move . / && ` +
    `exec "$bb" chroot . "$@"`;
  const bb = ctx.tools.busybox;
  const out = await new Deno.Command(bb, {
    args: [
      ...["unshare", "--mount", "--propagation", "private", "--", bb, "sh", "-c", enter, bb, moved],
      ...[...ctx.helper, ctx.root, ctx.cgroup],
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  if (!out.success) {
    const why = dec.decode(out.stderr).trim().split("\n").at(-1) ?? "";
    throw new ProbeProblem(`entries: the helper exited ${out.code}: ${why}`);
  }
  const facts: FactList = [];
  for (const line of dec.decode(out.stdout).split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) facts.push([line.slice(0, eq), unescapeValue(line.slice(eq + 1))]);
  }
  facts.push(["after.machine-id", (await Deno.readTextFile(join(ctx.root, "etc/machine-id"))).trim()]);
  const below = parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo"))
    .map((m) => m.mountPoint).filter((p) => p.startsWith(`${ctx.root}/`));
  facts.push(["after.mounts", below.length === 0 ? "none" : below.join(" ")]);
  return facts;
}

/** A value as the helper writes it: `\\`, `\n` and `\r` escaped. */
export function escapeValue(v: string): string {
  return v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll("\r", "\\r");
}

/** The inverse of {@link escapeValue}. */
export function unescapeValue(v: string): string {
  return v.replace(/\\(.)/g, (_, c: string) => c === "n" ? "\n" : c === "r" ? "\r" : c);
}

/** The first `name` on PATH. */
async function onPath(name: string): Promise<string> {
  for (const dir of (Deno.env.get("PATH") ?? "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
    if (dir === "") continue;
    try {
      if ((await Deno.stat(join(dir, name))).isFile) return join(dir, name);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  throw new ProbeProblem(`entries: no ${name} on PATH`);
}

/** This guest's tools: `busybox` (static) and `setpriv` from PATH, setpriv's libraries from its loader. */
export async function guestEntryTools(): Promise<EntryTools> {
  const setpriv = await onPath("setpriv");
  return { busybox: await onPath("busybox"), setpriv, libraries: await setprivLibraries(setpriv) };
}
