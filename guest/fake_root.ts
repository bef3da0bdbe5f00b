/**
 * A fake layered root for tests of the worker: it records each operation, fails the stage a test names, and runs
 * every probe of the seed's tables on a model of the root: the image's files in memory ({@link MemFs}), in the
 * configuration's overlay mode (trusted lowers: a metadata-only copy-up and an allowed rename; untrusted: the data
 * copied and the rename refused), an upper of a given size, and the first partition of a GPT disk, whose bound the
 * assembly checks. The mapping probes run through the same mapper as the Linux root's, over the in-memory file
 * system. Probes are checked as the Linux root checks them ({@link checkProbe}); `echo-args` is the fake's own.
 *
 * @module
 */
import type { Facts, Mapping, Probe, RootConfig, RootStage } from "../core/framing/mod.ts";
import { DEFAULT_FIRST_PARTITION_BOUND, firstPartitionFacts } from "./first_partition.ts";
import { FILL_AFTER, RENAMED } from "./layer_probes.ts";
import { RootMapper } from "./mapping/mapper.ts";
import { type MappingContext, probeMap, probeMapChecks, probeMapRefused } from "./mapping/mapping_probes.ts";
import { errnoOf } from "./mapping/fs_ops.ts";
import { MemFs, type MemNode } from "./mapping/mem_fs.ts";
import { checkProbe } from "./probe_table.ts";
import { probeOrphan, probeZombies } from "./process_probes.ts";
import type { RootOperations } from "./root_ops.ts";
import { MappingFailed, ProbeProblem, StageFailed } from "./root_errors.ts";
import { overlayModeOptions, parseLayout, type RootLayout } from "./root_layout.ts";

/** Options of a {@link FakeRoot}. */
export interface FakeRootOptions {
  /** The kernel command line the layout stage reads. */
  readonly cmdline?: string;
  /** A stage that fails. */
  readonly failStage?: RootStage;
  /** The assembly finishes once this settles (a test holds it open to act while the root is being assembled). */
  readonly assembly?: Promise<void>;
  /** The index of a mapping that fails to apply. */
  readonly failMapping?: number;
  /** The image's files, by path in the root; `null` for a directory. */
  readonly image?: Readonly<Record<string, string | null>>;
  /** The GPT disk's first partition, padding included (the assembly checks it against the bound). */
  readonly firstPartition?: Uint8Array;
  /** The upper's size in bytes. */
  readonly upperBytes?: number;
  /** The guest's memory in bytes. */
  readonly memoryBytes?: number;
  /** How often map-checks attaches its read-only mapping. */
  readonly attaches?: number;
}

/** The command line of an EROFS image over a scratch. */
export const EROFS_OVER_SCRATCH = "console=hvc0 nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:1234 " +
  "nvx_scratch=0xd0006000,ext4";

/** The fake image's files. */
export const FAKE_IMAGE: Readonly<Record<string, string | null>> = {
  "etc/os-release": 'NAME="Ubuntu"\nID=ubuntu\n',
  "etc/hostname": "ubuntu\n",
  "usr/share/data.bin": "x".repeat(10_000),
  "opt/lowerdir": null,
  "opt/lowerdir/file": "in a lower directory",
  srv: null,
};

/** The fake first partition: 4 KiB of bytes that are not UTF-8, padded to 64 KiB. */
export const FAKE_FIRST_PARTITION: Uint8Array = (() => {
  const b = new Uint8Array(65536);
  for (let i = 0; i < 4096; i++) b[i] = 0x80 + (i % 64);
  return b;
})();

/** The fake's answer to the entries probe, which needs what only a Linux guest has. */
export const ENTRIES_NEED_LINUX = "entries enters the root through Linux namespaces, which the fake root has none of";

const MIB = 1024 * 1024;

/** A root that lives in memory. */
export class FakeRoot implements RootOperations {
  readonly ops: string[] = [];
  readonly mapped: Mapping[] = [];
  readonly fs = new MemFs({ pid: 4242 });
  config: RootConfig | null = null;
  layout: RootLayout | null = null;
  mounted = false;
  #rootMapper: RootMapper | null = null;
  #refused = false;
  #held = false;

  constructor(readonly opts: FakeRootOptions = {}) {}

  #stage(stage: RootStage): void {
    this.ops.push(stage);
    if (this.opts.failStage === stage) throw new StageFailed(stage, `the fake ${stage} fails`);
  }

  get #root(): string {
    return `${this.config!.runtime}/root`;
  }

  readLayout(): Promise<RootLayout> {
    this.#stage("layout");
    return Promise.resolve(parseLayout(this.opts.cmdline ?? EROFS_OVER_SCRATCH));
  }

  bootstrap(config: RootConfig): Promise<void> {
    this.#stage("bootstrap");
    this.config = config;
    return Promise.resolve();
  }

  async assemble(config: RootConfig, layout: RootLayout): Promise<void> {
    if (this.opts.assembly) await this.opts.assembly;
    this.#stage("assembly");
    this.config = config;
    if (layout.image.format === "gpt") {
      const size = BigInt((this.opts.firstPartition ?? FAKE_FIRST_PARTITION).length);
      const bound = config.firstPartitionBound ?? DEFAULT_FIRST_PARTITION_BOUND;
      if (size > bound) {
        throw new StageFailed("assembly", `the first partition holds ${size} bytes, beyond its bound of ${bound}`);
      }
    }
    for (const [path, data] of Object.entries(this.opts.image ?? FAKE_IMAGE)) {
      const node: MemNode = data === null
        ? { kind: "directory", entries: new Map(), lower: true }
        : { kind: "file", data, lower: true };
      this.fs.seed(`${this.#root}/${path}`, node);
    }
    this.#rootMapper = new RootMapper(this.fs, this.#root);
    this.layout = layout;
    this.mounted = true;
  }

  /** The names of the assembly's mounts, their types, sources, options and super options. */
  #mounts(): Facts {
    const l = this.layout!;
    const rt = this.config!.runtime;
    const rows: [string, string, string, string, string][] = [];
    const lowers: string[] = [];
    if (l.image.format === "erofs") {
      rows.push(["distro", "erofs", "/dev/vda", "ro,relatime", "ro"]);
      lowers.push(`${rt}/distro`);
    } else {
      for (const n of [2, 3]) {
        rows.push([`p${n}`, "ext4", `/dev/vda${n}`, "ro,nosuid,nodev,relatime", "ro,norecovery,errors=remount-ro"]);
        lowers.unshift(`${rt}/p${n}`);
      }
    }
    const upper = l.upper.kind === "scratch" ? "scratch" : "tmpfs";
    if (upper === "scratch") rows.push(["scratch", "ext4", "/dev/vdb", "rw,relatime", "rw"]);
    else rows.push(["tmpfs", "tmpfs", "tmpfs", "rw,relatime", "rw,mode=755"]);
    const mode = overlayModeOptions(this.config!.overlayMode);
    const over = `rw,lowerdir=${lowers.join(":")},upperdir=${rt}/${upper}/upper,workdir=${rt}/${upper}/work,${mode}`;
    rows.push(["root", "overlay", "overlay", "rw,relatime", over]);
    return rows.flatMap(([name, type, source, options, sup]) => [
      [`${name}.count`, "1"] as const,
      [`${name}.type`, type] as const,
      [`${name}.source`, source] as const,
      [`${name}.options`, options] as const,
      [`${name}.super`, sup] as const,
    ]);
  }

  #layerNode(path: string): MemNode | null {
    const image = this.opts.image ?? FAKE_IMAGE;
    if (!Object.hasOwn(image, path)) return null;
    const data = image[path]!;
    return data === null ? { kind: "directory", entries: new Map(), lower: true } : { kind: "file", data, lower: true };
  }

  #upperBytes(node: MemNode | null = this.fs.node(this.#root)): number {
    if (node === null) return 0;
    if (node.kind === "file") return node.lower ? 0 : node.data.length;
    if (node.kind !== "directory") return 0;
    let n = 0;
    for (const child of node.entries.values()) n += this.#upperBytes(child);
    return n;
  }

  async #contents(): Promise<Facts> {
    const root = this.#root;
    const release = await this.fs.readFile(`${root}/etc/os-release`).catch((e) => {
      if (errnoOf(e) === "ENOENT") return null;
      throw e;
    });
    const facts: [string, string][] = [];
    if (release !== null) facts.push(["os-release.id", /^ID=(.*)$/m.exec(release)?.[1] ?? "none"]);
    facts.push(["root.mode", "0755"]);
    await this.fs.writeFile(`${root}/.runtime-adapter-probe`, "runtime-adapter-probe");
    facts.push(["write.root", "runtime-adapter-probe"], ["write.upper", "runtime-adapter-probe"]);
    facts.push(["lower.write", "refused EROFS"]);
    return facts;
  }

  #copyUp(file: string): Facts {
    const lower = this.#layerNode(file);
    const node = this.fs.node(`${this.#root}/${file}`);
    if (lower?.kind !== "file" || node?.kind !== "file") {
      throw new ProbeProblem(`FILE ${file} is no regular file of the layers`);
    }
    const trusted = (this.config!.overlayMode ?? "trusted-lowers") === "trusted-lowers";
    const upper = node.lower ? (trusted ? "none" : "copied") : node.data === lower.data ? "copied" : "different";
    return [
      ["lower.size", String(lower.data.length)],
      ["upper.size", String(node.data.length)],
      ["upper.data", upper],
      ["root.data", node.data === lower.data ? "intact" : "different"],
    ];
  }

  #rename(directory: string): Facts {
    if (this.#layerNode(directory)?.kind !== "directory") {
      throw new ProbeProblem(`DIRECTORY ${directory} is no directory of the layers`);
    }
    if (this.fs.node(`${this.#root}/${RENAMED}`) !== null) {
      return [["outcome", `failed: ${RENAMED} exists`]];
    }
    const trusted = (this.config!.overlayMode ?? "trusted-lowers") === "trusted-lowers";
    return [["outcome", trusted ? "allowed" : "refused"]];
  }

  #fill(): Facts {
    const memory = this.opts.memoryBytes ?? 2048 * MIB;
    const total = this.opts.upperBytes ?? (this.layout!.upper.kind === "scratch" ? 64 * MIB : memory / 2);
    const available = Math.max(0, total - this.#upperBytes());
    return [
      ["total", String(total)],
      ["available", String(available)],
      ["written", String(available)],
      ["error", "ENOSPC"],
      ["after", FILL_AFTER],
      ["memory", String(memory)],
    ];
  }

  #devices(): Facts {
    const c = this.config!;
    const disks = [`vda:${c.distroSectors ?? 4194304n}:ro`];
    if (this.layout!.upper.kind === "scratch") disks.push(`vdb:${c.scratchSectors ?? 131072n}:rw`);
    return [["disks", disks.join(" ")]];
  }

  #cgroups(): Facts {
    const c = this.config!;
    const facts: [string, string][] = [
      ["parent.type", "cgroup2"],
      ["parent.subtree-control", "memory pids"],
      ["agent.exists", "true"],
      ["workload.exists", "true"],
    ];
    if (c.agentMemoryLow !== undefined) facts.push(["agent.memory.low", String(c.agentMemoryLow)]);
    if (c.workloadMemoryMax !== undefined) facts.push(["workload.memory.max", String(c.workloadMemoryMax)]);
    if (c.workloadPidsMax !== undefined) facts.push(["workload.pids.max", String(c.workloadPidsMax)]);
    facts.push(["agent.processes", "2"], ["workload.processes", "0"], ["user-namespaces", "unavailable"]);
    return facts;
  }

  #processes(): Facts {
    const rows: [string, number, string, string, string][] = [
      ["pid1", 1, "0", "0::/agent", "/init layered"],
      ["worker", 2, "1", "0::/agent", "/init worker /dev/hvc0 3"],
      ["sibling", 3, "1", "0::/agent", "/bin/sleep infinity"],
    ];
    return rows.flatMap(([name, pid, ppid, cgroup, command]) => [
      [`${name}.pid`, String(pid)] as const,
      [`${name}.state`, "S"] as const,
      [`${name}.ppid`, ppid] as const,
      [`${name}.root`, "/"] as const,
      [`${name}.cgroup`, cgroup] as const,
      [`${name}.command`, command] as const,
      [`${name}.namespaces`, "same"] as const,
    ]);
  }

  #mapping(): MappingContext {
    return {
      fs: this.fs,
      root: this.#root,
      rootMapper: this.#rootMapper!,
      pid: 4242,
      attaches: this.opts.attaches,
      upperKind: (path) => {
        const n = this.fs.node(`${this.#root}${path}`);
        return Promise.resolve(n === null || n.lower ? null : n.kind);
      },
    };
  }

  async probe(p: Probe): Promise<Facts> {
    this.ops.push(`probe ${[p.name, ...p.args].join(" ")}`);
    if (p.name === "echo-args") return p.args.map((a, i) => [`arg${i}`, a] as const);
    const path = checkProbe(p);
    switch (p.name) {
      case "mounts":
        return this.#mounts();
      case "contents":
        return await this.#contents();
      case "copy-up":
        return this.#copyUp(path!);
      case "rename":
        return this.#rename(path!);
      case "fill":
        return this.#fill();
      case "devices":
        return this.#devices();
      case "first-partition":
        return firstPartitionFacts(
          this.layout!.image.format === "gpt" ? this.opts.firstPartition ?? FAKE_FIRST_PARTITION : null,
        );
      case "cgroups":
        return this.#cgroups();
      case "processes":
        return this.#processes();
      case "hold":
        this.#held = true;
        return [["held", this.#root]];
      case "map":
        return await probeMap(this.#mapping());
      case "map-refused":
        return await probeMapRefused(this.#mapping());
      case "map-checks":
        return await probeMapChecks(this.#mapping());
      // About the guest's processes, not the root: the same probes as the Linux root's.
      case "orphan":
        return await probeOrphan();
      case "zombies":
        return await probeZombies();
    }
    if (p.name === "entries") throw new ProbeProblem(ENTRIES_NEED_LINUX);
    throw new ProbeProblem(`probe ${p.name} is not in this build`);
  }

  /** Whether a refused mapping latched the root (the host's or a probe's). */
  get latched(): boolean {
    return this.#refused || (this.#rootMapper?.latched ?? false);
  }

  applyMapping(m: Mapping): Promise<void> {
    if (this.latched) return Promise.reject(new MappingFailed("latched"));
    if (this.opts.failMapping === this.mapped.length) {
      this.#refused = true;
      return Promise.reject(new MappingFailed(`the fake refuses ${new TextDecoder().decode(m.target)}`));
    }
    this.mapped.push(m);
    this.ops.push("map");
    return Promise.resolve();
  }

  startWorkloads(): Promise<void> {
    this.ops.push("start");
    return Promise.resolve();
  }

  async teardown(): Promise<void> {
    this.#stage("teardown");
    if (this.#held) throw new StageFailed("teardown", `umount ${this.#root}: target is busy`);
    await this.#rootMapper?.mapper.teardown();
    this.mounted = false;
  }

  release(): Promise<void> {
    this.ops.push("release");
    this.mounted = false;
    return Promise.resolve();
  }
}
