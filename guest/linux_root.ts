/**
 * The Linux root operations (seed 002 §"PID 1 and the worker"): the layout from /proc/cmdline, the cgroups of the
 * configuration, and an overlay over an EROFS image (or the EROFS layers of a GPT disk's partitions after the
 * first) with an upper on an ext4 scratch or a tmpfs in RAM, all below the configuration's runtime directory.
 * Mounting goes through util-linux `mount`/`umount` (Deno has no mount API); block devices are found by their
 * virtio-mmio address in sysfs unless a test injects its own (loop devices).
 *
 * Exercised here (tests with loop devices): EROFS over tmpfs, mounts probe, teardown, a teardown that a held
 * file keeps from unmounting. Not exercised: virtio-mmio lookup, GPT partitions, an ext4 scratch's journal
 * policy, cgroup v2 bootstrap (this machine's cgroup2 holds only hugetlb), mappings.
 *
 * @module
 */
import { join } from "node:path";
import type { Logger } from "../core/log/mod.ts";
import type { Facts, Mapping, Probe, RootConfig } from "../core/framing/mod.ts";
import { MappingFailed, ProbeProblem, type RootOperations, StageFailed } from "./root_ops.ts";
import { parseLayout, type RootLayout } from "./root_layout.ts";
import { mountFacts, osReleaseId, parseMountInfo, parseStatus, readFact } from "./linux_probes.ts";

/** Options of a {@link LinuxRoot}. */
export interface LinuxRootOptions {
  readonly log: Logger;
  /** PID 1's unrelated child. */
  readonly sibling?: number;
  readonly cmdlinePath?: string;
  /** The block device at a virtio-mmio address; waits up to `timeoutMs`. */
  readonly resolveDevice?: (address: bigint, timeoutMs: number) => Promise<string>;
  /** Where the host's export is mounted, below which mapping sources lie. */
  readonly exportDir?: string;
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim() || `status ${out.code}`}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** The block device whose sysfs path names `address` as a virtio-mmio device, waiting for it to appear. */
export async function virtioDevice(address: bigint, timeoutMs: number): Promise<string> {
  const tag = `${address.toString(16)}.virtio_mmio`;
  const end = Date.now() + timeoutMs;
  for (;;) {
    for await (const e of Deno.readDir("/sys/class/block")) {
      const link = await Deno.realPath(`/sys/class/block/${e.name}`).catch(() => "");
      if (link.includes(tag) && !/\d$/.test(e.name.replace(/^vd[a-z]+/, ""))) return `/dev/${e.name}`;
    }
    if (Date.now() >= end) throw new Error(`no block device at ${tag} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A layered root on this Linux guest. */
export class LinuxRoot implements RootOperations {
  readonly #mounts: string[] = [];
  readonly #held: Deno.FsFile[] = [];
  #config: RootConfig | null = null;
  #layout: RootLayout | null = null;

  constructor(readonly opts: LinuxRootOptions) {}

  get #runtime(): string {
    return this.#config!.runtime;
  }

  async readLayout(): Promise<RootLayout> {
    let cmdline: string;
    try {
      cmdline = await Deno.readTextFile(this.opts.cmdlinePath ?? "/proc/cmdline");
    } catch (e) {
      throw new StageFailed("layout", `cannot read the kernel command line: ${String(e)}`);
    }
    return parseLayout(cmdline);
  }

  async bootstrap(config: RootConfig): Promise<void> {
    this.#config = config;
    const parent = join(config.agentCgroup, "..");
    try {
      await Deno.stat(join(parent, "cgroup.controllers"));
    } catch (e) {
      throw new StageFailed("bootstrap", `${parent} is no cgroup2 directory: ${String(e)}`);
    }
    try {
      await Deno.mkdir(config.agentCgroup, { recursive: true });
      await Deno.mkdir(config.workloadCgroup, { recursive: true });
      const procs = (await Deno.readTextFile(join(parent, "cgroup.procs"))).split("\n").filter((l) => l !== "");
      for (const pid of procs) {
        await Deno.writeTextFile(join(config.agentCgroup, "cgroup.procs"), pid).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound) && !/ESRCH|No such process/.test(String(e))) throw e;
        });
      }
      await Deno.writeTextFile(join(parent, "cgroup.subtree_control"), "+memory +pids");
      const write = (f: string, v: bigint | undefined) =>
        v === undefined ? undefined : Deno.writeTextFile(f, String(v));
      await write(join(config.agentCgroup, "memory.low"), config.agentMemoryLow);
      await write(join(config.workloadCgroup, "memory.max"), config.workloadMemoryMax);
      await write(join(config.workloadCgroup, "pids.max"), config.workloadPidsMax);
    } catch (e) {
      throw new StageFailed("bootstrap", `the cgroups: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    }
  }

  async #mount(args: string[], target: string): Promise<void> {
    await Deno.mkdir(target, { recursive: true });
    await run("mount", [...args, target]);
    this.#mounts.push(target);
  }

  async #device(address: bigint, sectors: bigint | undefined, what: string): Promise<string> {
    const dev = await (this.opts.resolveDevice ?? virtioDevice)(address, this.#config!.deviceTimeoutMs);
    if (sectors !== undefined) {
      const size = BigInt((await Deno.readTextFile(`/sys/class/block/${dev.split("/").pop()}/size`)).trim());
      if (size !== sectors) throw new Error(`the ${what} has ${size} sectors, not ${sectors}`);
    }
    return dev;
  }

  async assemble(config: RootConfig, layout: RootLayout): Promise<void> {
    this.#config = config;
    this.#layout = layout;
    const rt = config.runtime;
    try {
      await Deno.mkdir(rt, { recursive: true, mode: 0o700 });
      const image = await this.#device(layout.image.address, config.distroSectors, "image");
      const lowers: string[] = [];
      if (layout.image.format === "erofs") {
        const uuid = (await run("blkid", ["-o", "value", "-s", "UUID", image])).trim();
        if (uuid !== layout.image.identity) {
          throw new Error(`the image's identity is ${uuid}, not ${layout.image.identity}`);
        }
        await this.#mount(["-t", "erofs", "-o", "ro", image], join(rt, "distro"));
        lowers.push(join(rt, "distro"));
      } else {
        const ptuuid = (await run("blkid", ["-o", "value", "-s", "PTUUID", image])).trim();
        if (ptuuid.toLowerCase() !== layout.image.identity.toLowerCase()) {
          throw new Error(`the disk's identity is ${ptuuid}, not ${layout.image.identity}`);
        }
        const name = image.split("/").pop()!;
        const parts: number[] = [];
        for await (const e of Deno.readDir(`/sys/class/block/${name}`)) {
          const m = new RegExp(`^${name}p?(\\d+)$`).exec(e.name);
          if (m) parts.push(Number(m[1]));
        }
        parts.sort((a, b) => a - b);
        const bound = config.firstPartitionBound ?? 65536n;
        const first = parts[0];
        if (first !== undefined) {
          const size = BigInt((await Deno.readTextFile(`/sys/class/block/${name}/${name}${first}/size`)).trim()) * 512n;
          if (size > bound) throw new Error(`the first partition holds ${size} bytes, beyond ${bound}`);
        }
        for (const n of parts.slice(1)) {
          const dev = `${image}${/\d$/.test(image) ? "p" : ""}${n}`;
          await this.#mount(["-t", "erofs", "-o", "ro", dev], join(rt, `p${n}`));
          lowers.unshift(join(rt, `p${n}`));
        }
      }
      let upperBase: string;
      if (layout.upper.kind === "scratch") {
        const dev = await this.#device(layout.upper.address, config.scratchSectors, "scratch");
        if (config.scratchJournal === "forbidden") {
          const head = await run("dumpe2fs", ["-h", dev]);
          if (/features:.*has_journal/.test(head)) throw new Error("the scratch has a journal, which is forbidden");
        }
        upperBase = join(rt, "scratch");
        await this.#mount(["-t", "ext4", dev], upperBase);
      } else {
        upperBase = join(rt, "tmpfs");
        await this.#mount(["-t", "tmpfs", "-o", "mode=0755", "tmpfs"], upperBase);
      }
      await Deno.mkdir(join(upperBase, "upper"), { recursive: true });
      await Deno.mkdir(join(upperBase, "work"), { recursive: true });
      const mode = (config.overlayMode ?? "trusted-lowers") === "trusted-lowers"
        ? "redirect_dir=on,metacopy=on"
        : "redirect_dir=nofollow,metacopy=off";
      const opts = `lowerdir=${lowers.join(":")},upperdir=${join(upperBase, "upper")},workdir=${
        join(upperBase, "work")
      },${mode}`;
      await this.#mount(["-t", "overlay", "-o", opts, "overlay"], join(rt, "root"));
    } catch (e) {
      throw new StageFailed("assembly", e instanceof Error ? e.message : String(e), { cause: e });
    }
  }

  async probe(p: Probe): Promise<Facts> {
    const rt = this.#runtime;
    switch (p.name) {
      case "mounts": {
        if (p.args.length > 0) throw new ProbeProblem("mounts takes no arguments");
        const entries = parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo"));
        const names: [string, string][] = this.#mounts.map((m) => [m.split("/").pop()!, m]);
        return mountFacts(entries, names);
      }
      case "contents": {
        const root = join(rt, "root");
        const id = osReleaseId((await readFact(join(root, "etc/os-release"))) ?? "");
        const st = await Deno.stat(root);
        return [["os-release.id", id ?? "absent"], ["root.mode", ((st.mode ?? 0) & 0o7777).toString(8)]];
      }
      case "devices": {
        const disks: string[] = [];
        const names = [];
        for await (const e of Deno.readDir("/sys/block")) names.push(e.name);
        for (const n of names.sort()) {
          const size = await readFact(`/sys/block/${n}/size`);
          const ro = await readFact(`/sys/block/${n}/ro`);
          if (size !== null && size !== "0") disks.push(`${n}:${size}:${ro === "1" ? "ro" : "rw"}`);
        }
        return [["disks", disks.join(" ")]];
      }
      case "cgroups": {
        const c = this.#config!;
        const facts: [string, string][] = [];
        const add = async (k: string, f: string) => {
          const v = await readFact(f);
          if (v !== null) facts.push([k, v]);
        };
        await add("parent.subtree-control", join(c.agentCgroup, "..", "cgroup.subtree_control"));
        facts.push(["agent.exists", String(await exists(c.agentCgroup))]);
        facts.push(["workload.exists", String(await exists(c.workloadCgroup))]);
        await add("agent.memory.low", join(c.agentCgroup, "memory.low"));
        await add("workload.memory.max", join(c.workloadCgroup, "memory.max"));
        await add("workload.pids.max", join(c.workloadCgroup, "pids.max"));
        return facts;
      }
      case "processes": {
        const facts: [string, string][] = [];
        for (const [name, pid] of [["pid1", 1], ["worker", Deno.pid], ["sibling", this.opts.sibling]] as const) {
          if (pid === undefined) continue;
          facts.push([`${name}.pid`, String(pid)]);
          const st = parseStatus((await readFact(`/proc/${pid}/status`)) ?? "");
          if (st) facts.push([`${name}.state`, st.state], [`${name}.ppid`, st.ppid]);
        }
        return facts;
      }
      case "hold": {
        const root = join(rt, "root");
        this.#held.push(await Deno.open(root, { read: true }));
        return [["held", root]];
      }
      default:
        throw new ProbeProblem(`probe ${p.name} is not in this build`);
    }
  }

  async applyMapping(m: Mapping): Promise<void> {
    const dec = new TextDecoder();
    const source = join(this.opts.exportDir ?? join(this.#runtime, "export"), dec.decode(m.source));
    const target = join(this.#runtime, "root", dec.decode(m.target));
    try {
      const st = await Deno.stat(source);
      if (st.isDirectory) await Deno.mkdir(target, { recursive: true });
      else {
        await Deno.mkdir(join(target, ".."), { recursive: true });
        await Deno.writeFile(target, new Uint8Array(0), { append: true });
      }
      await run("mount", ["--bind", source, target]);
      this.#mounts.push(target);
      if (m.readOnly) await run("mount", ["-o", "remount,bind,ro", target]);
    } catch (e) {
      throw new MappingFailed(e instanceof Error ? e.message : String(e));
    }
  }

  startWorkloads(): Promise<void> {
    this.opts.log.info({ layout: this.#layout?.image.format }, "workloads may start");
    return Promise.resolve();
  }

  async teardown(): Promise<void> {
    while (this.#mounts.length > 0) {
      const m = this.#mounts.at(-1)!;
      try {
        await run("umount", [m]);
      } catch (e) {
        throw new StageFailed("teardown", e instanceof Error ? e.message : String(e));
      }
      this.#mounts.pop();
    }
  }

  async release(): Promise<void> {
    for (const f of this.#held.splice(0)) f.close();
    while (this.#mounts.length > 0) {
      const m = this.#mounts.pop()!;
      await run("umount", ["-l", m]).catch((e) => this.opts.log.warn({ mount: m, err: String(e) }, "umount failed"));
    }
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.stat(p);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
