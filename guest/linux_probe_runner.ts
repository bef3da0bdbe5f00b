/**
 * The Linux root's probes (seed 002 §Probes): each row of the seed's tables, over what the assembly built. A
 * probe is checked first ({@link checkProbe}); whatever fails while it runs becomes its {@link ProbeProblem}, so
 * the worker answers ProbeFailed and goes on. A value that a probe cannot read is absent when its file does not
 * exist, and otherwise `unreadable: PROBLEM`.
 *
 * @module
 */
import { join } from "../core/util/path.ts";
import type { Facts, Probe, RootConfig } from "../core/framing/mod.ts";
import { type EntriesContext, probeEntries } from "./entries.ts";
import { firstPartitionFacts } from "./first_partition.ts";
import { type Layers, probeCopyUp, probeFill, probeRename } from "./layer_probes.ts";
import { mountFacts, osReleaseId, parseStatus, readFact } from "./linux_probes.ts";
import { parseMountInfo } from "./proc/mountinfo.ts";
import { type MappingContext, probeMap, probeMapChecks, probeMapRefused } from "./mapping/mapping_probes.ts";
import { checkProbe } from "./probe_table.ts";
import { probeOrphan, probeZombies } from "./process_probes.ts";
import { ProbeProblem } from "./root_errors.ts";

/** What the probes of an assembled Linux root work on. */
export interface LinuxProbeContext {
  readonly config: RootConfig;
  readonly layers: Layers;
  /** The mounts of the assembly, by name (distro, pN, scratch, tmpfs, root), in mount order. */
  readonly mountPoints: ReadonlyArray<readonly [string, string]>;
  /** The first partition's bytes that the assembly returned, or null for an EROFS image. */
  readonly firstPartition: Uint8Array | null;
  /** PID 1's unrelated child. */
  readonly sibling?: number;
  readonly mapping: MappingContext;
  /** Opens the root and keeps it open until the worker ends; returns the path. */
  hold(): Promise<string>;
  /** What the entries probe runs; absent where this worker cannot run its helper (then the probe fails). */
  readonly entries?: EntriesContext;
}

type FactList = [string, string][];

/** Pushes a fact read from a file: absent when the file does not exist. */
async function add(facts: FactList, key: string, path: string, map: (s: string) => string = (s) => s): Promise<void> {
  const v = await readFact(path);
  if (v !== null) facts.push([key, v.startsWith("unreadable: ") ? v : map(v)]);
}

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.lstat(p);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

async function contents(ctx: LinuxProbeContext): Promise<Facts> {
  const { root, upper, lowers } = ctx.layers;
  const facts: FactList = [];
  const release = await readFact(join(root, "etc/os-release"));
  if (release !== null) {
    facts.push(["os-release.id", release.startsWith("unreadable: ") ? release : osReleaseId(release) ?? "none"]);
  }
  facts.push(["root.mode", (((await Deno.stat(root)).mode ?? 0) & 0o7777).toString(8).padStart(4, "0")]);
  const name = ".runtime-adapter-probe";
  await Deno.writeTextFile(join(root, name), "runtime-adapter-probe");
  await add(facts, "write.root", join(root, name));
  await add(facts, "write.upper", join(upper, name));
  const top = lowers[0]!;
  await add(facts, "write.lower", join(top, name));
  try {
    await Deno.writeTextFile(join(top, ".runtime-adapter-lower"), "x", { createNew: true });
    await Deno.remove(join(top, ".runtime-adapter-lower"));
    facts.push(["lower.write", "allowed"]);
  } catch (e) {
    const code = (e as { code?: string }).code;
    facts.push(["lower.write", code ? `refused ${code}` : `failed ${String(e)}`]);
  }
  return facts;
}

async function devices(): Promise<Facts> {
  const names: string[] = [];
  for await (const e of Deno.readDir("/sys/block")) names.push(e.name);
  const disks: string[] = [];
  for (const n of names.sort()) {
    if (!(await exists(`/sys/block/${n}/device`))) continue;
    const size = await readFact(`/sys/block/${n}/size`);
    const ro = await readFact(`/sys/block/${n}/ro`);
    if (size !== null) disks.push(`${n}:${size}:${ro === "1" ? "ro" : "rw"}`);
  }
  return [["disks", disks.join(" ")]];
}

async function cgroups(c: RootConfig): Promise<Facts> {
  const parent = join(c.agentCgroup, "..");
  const facts: FactList = [];
  const mounts = parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo"));
  const holder = mounts.filter((m) => parent === m.mountPoint || parent.startsWith(`${m.mountPoint}/`))
    .sort((a, b) => a.mountPoint.length - b.mountPoint.length).at(-1);
  if (holder) facts.push(["parent.type", holder.type]);
  await add(facts, "parent.subtree-control", join(parent, "cgroup.subtree_control"));
  facts.push(["agent.exists", String(await exists(c.agentCgroup))]);
  facts.push(["workload.exists", String(await exists(c.workloadCgroup))]);
  await add(facts, "agent.memory.low", join(c.agentCgroup, "memory.low"));
  await add(facts, "workload.memory.max", join(c.workloadCgroup, "memory.max"));
  await add(facts, "workload.pids.max", join(c.workloadCgroup, "pids.max"));
  const count = (s: string) => String(s.split("\n").filter((l) => l !== "").length);
  await add(facts, "agent.processes", join(c.agentCgroup, "cgroup.procs"), count);
  await add(facts, "workload.processes", join(c.workloadCgroup, "cgroup.procs"), count);
  const userns = await readFact("/proc/sys/user/max_user_namespaces");
  facts.push(["user-namespaces", userns ?? "unavailable"]);
  return facts;
}

/** What {@link namespacesFact} reads: `Deno` itself, or a fake in tests. */
export interface NamespaceLinks {
  readDir(path: string): AsyncIterable<{ readonly name: string }>;
  readLink(path: string): Promise<string>;
}

/**
 * NAME.namespaces (002 §Probes, processes): `same` when each of PID 1's namespace links reads the same for `pid`,
 * else the names that differ. A link that cannot be read on either side rejects (the probe reports the fact
 * `unreadable: …`): two unreadable links are not the same namespace.
 */
export async function namespacesFact(pid: number, fs: NamespaceLinks = Deno): Promise<string> {
  const differ: string[] = [];
  const names: string[] = [];
  for await (const e of fs.readDir(`/proc/1/ns`)) names.push(e.name);
  for (const n of names.sort()) {
    const [a, b] = await Promise.all([fs.readLink(`/proc/1/ns/${n}`), fs.readLink(`/proc/${pid}/ns/${n}`)]);
    if (a !== b) differ.push(n);
  }
  return differ.length === 0 ? "same" : differ.join(" ");
}

async function processes(sibling: number | undefined): Promise<Facts> {
  const facts: FactList = [];
  for (const [name, pid] of [["pid1", 1], ["worker", Deno.pid], ["sibling", sibling]] as const) {
    if (pid === undefined) continue;
    facts.push([`${name}.pid`, String(pid)]);
    const status = await readFact(`/proc/${pid}/status`);
    const st = status === null ? null : parseStatus(status);
    if (st === null) continue;
    facts.push([`${name}.state`, st.state], [`${name}.ppid`, st.ppid]);
    const root = await Deno.readLink(`/proc/${pid}/root`).catch((e) => `unreadable: ${e}`);
    facts.push([`${name}.root`, root]);
    await add(facts, `${name}.cgroup`, `/proc/${pid}/cgroup`, (s) => s.split("\n").join(" "));
    await add(facts, `${name}.command`, `/proc/${pid}/cmdline`, (s) => s.replace(/\0+$/, "").replaceAll("\0", " "));
    facts.push([`${name}.namespaces`, await namespacesFact(pid).catch((e) => `unreadable: ${e}`)]);
  }
  return facts;
}

async function dispatch(ctx: LinuxProbeContext, p: Probe, path: string | null): Promise<Facts> {
  switch (p.name) {
    case "mounts":
      return mountFacts(parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo")), ctx.mountPoints);
    case "contents":
      return await contents(ctx);
    case "copy-up":
      return await probeCopyUp(ctx.layers, path!);
    case "rename":
      return await probeRename(ctx.layers, path!);
    case "fill":
      return await probeFill(ctx.layers);
    case "devices":
      return await devices();
    case "first-partition":
      return firstPartitionFacts(ctx.firstPartition);
    case "cgroups":
      return await cgroups(ctx.config);
    case "processes":
      return await processes(ctx.sibling);
    case "hold":
      return [["held", await ctx.hold()]];
    case "map":
      return await probeMap(ctx.mapping);
    case "map-refused":
      return await probeMapRefused(ctx.mapping);
    case "map-checks":
      return await probeMapChecks(ctx.mapping);
    case "entries":
      if (ctx.entries === undefined) throw new ProbeProblem("entries: this worker has no helper to run");
      return await probeEntries(ctx.entries);
    case "orphan":
      return await probeOrphan();
    case "zombies":
      return await probeZombies();
  }
  throw new ProbeProblem(`probe ${p.name} is not in this build`);
}

/** Runs a probe on the Linux root; throws {@link ProbeProblem}. */
export async function runLinuxProbe(ctx: LinuxProbeContext, p: Probe): Promise<Facts> {
  const path = checkProbe(p);
  try {
    return await dispatch(ctx, p, path);
  } catch (e) {
    if (e instanceof ProbeProblem) throw e;
    throw new ProbeProblem(`${p.name}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}
