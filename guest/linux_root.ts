/**
 * The Linux root operations (seed 002 §"PID 1 and the worker"): the layout from /proc/cmdline, the cgroups of the
 * configuration, and an overlay over an EROFS image (or the EROFS layers of a GPT disk's partitions after the
 * first) with an upper on an ext4 scratch or a tmpfs in RAM, all below the configuration's runtime directory.
 * Mounting goes through util-linux `mount`/`umount` (Deno has no mount API); block devices are found by their
 * virtio-mmio address in sysfs unless a test injects its own (loop devices).
 *
 * The layers of a GPT disk are ext4 (or ext2) file systems, mounted ro,nosuid,nodev with journal loading
 * suppressed (noload, which the kernel reports as norecovery) and errors=remount-ro, after a check that no layer
 * needs recovery; the assembly keeps the first partition's bytes for the first-partition probe. Mappings, the
 * host's and the mapping probes', go through the root's {@link RootMapper}; the probes run in
 * `linux_probe_runner.ts`.
 *
 * The image's identity (the EROFS UUID, the GPT disk's PTUUID) is read by probing the device (`blkid -p`), never from
 * the blkid cache (`/run/blkid/blkid.tab`): a reused device (a loop device re-attached to another image, a disk
 * swapped under the same name) keeps its old entry there, and the check would compare a stale identity.
 *
 * Exercised here (tests with loop devices): EROFS over tmpfs, a GPT disk (sfdisk) of ext4/ext2 layers over tmpfs,
 * every probe, mappings, teardown, a teardown that a held file keeps from unmounting. Not exercised:
 * virtio-mmio lookup, an ext4 scratch's journal policy, cgroup v2 bootstrap (this machine's cgroup2 holds only
 * hugetlb), the entries probe (not built).
 *
 * @module
 */
import { join } from "../core/util/path.ts";
import type { Logger } from "../core/log/mod.ts";
import type { Facts, Mapping, Probe, RootConfig } from "../core/framing/mod.ts";
import type { RootOperations } from "./root_ops.ts";
import { MappingFailed, StageFailed } from "./root_errors.ts";
import { overlayModeOptions, parseLayout, type RootLayout } from "./root_layout.ts";
import { DEFAULT_FIRST_PARTITION_BOUND } from "./first_partition.ts";
import type { Layers } from "./layer_probes.ts";
import { guestEntryTools } from "./entries.ts";
import { type LinuxProbeContext, runLinuxProbe } from "./linux_probe_runner.ts";
import { LinuxFs } from "./mapping/linux_fs.ts";
import { RootMapper } from "./mapping/mapper.ts";
import { isRelativePath } from "./probe_table.ts";
import { isKernelThread } from "./kernel_thread.ts";

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
  /** Options of the tmpfs upper (tests: `size=1m`, so that fill ends fast); the kernel's default size otherwise. */
  readonly tmpfsOptions?: string;
  /** Where the mapping probes write their sources and plant their links' target (tests: temp directories). */
  readonly sourcesDir?: string;
  readonly outsideDir?: string;
  /** How often map-checks attaches its read-only mapping (default 200). */
  readonly attaches?: number;
  /** The entries probe's helper, `bcd-guest entries` (absent: the probe fails, saying so). */
  readonly entriesHelper?: readonly string[];
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr).trim() || `status ${out.code}`}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/**
 * The block device at `address`, waiting for it to appear: the one whose sysfs path names it as a virtio-mmio device,
 * or, on a PCI machine (QEMU's `pc`, where `bcd-vm` launches), the virtio disk whose serial is the address's hex
 * digits (`virtio-blk-pci,serial=d0003000`).
 */
export async function virtioDevice(address: bigint, timeoutMs: number): Promise<string> {
  const tag = `${address.toString(16)}.virtio_mmio`;
  const serial = address.toString(16);
  const end = Date.now() + timeoutMs;
  for (;;) {
    for await (const e of Deno.readDir("/sys/class/block")) {
      const link = await Deno.realPath(`/sys/class/block/${e.name}`).catch((err) => {
        if (err instanceof Deno.errors.NotFound) return ""; // the device went away while the directory was read
        throw err;
      });
      if (link.includes(tag) && !/\d$/.test(e.name.replace(/^vd[a-z]+/, ""))) return `/dev/${e.name}`;
      if (/^vd[a-z]+$/.test(e.name)) {
        const s = await Deno.readTextFile(`/sys/class/block/${e.name}/serial`).catch((err) => {
          if (err instanceof Deno.errors.NotFound) return "";
          throw err;
        });
        if (s.trim() === serial) return `/dev/${e.name}`;
      }
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
  #lowers: string[] = [];
  #upper = "";
  #firstPartition: Uint8Array | null = null;
  #fs: LinuxFs | null = null;
  #mapper: RootMapper | null = null;

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
        if (await isKernelThread(pid)) continue; // the root cgroup lists them; cgroup2 refuses to move them
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
        const uuid = (await run("blkid", ["-p", "-o", "value", "-s", "UUID", image])).trim();
        if (uuid !== layout.image.identity) {
          throw new Error(`the image's identity is ${uuid}, not ${layout.image.identity}`);
        }
        await this.#mount(["-t", "erofs", "-o", "ro", image], join(rt, "distro"));
        lowers.push(join(rt, "distro"));
      } else {
        const ptuuid = (await run("blkid", ["-p", "-o", "value", "-s", "PTUUID", image])).trim();
        if (ptuuid.toLowerCase() !== layout.image.identity.toLowerCase()) {
          throw new Error(`the disk's identity is ${ptuuid}, not ${layout.image.identity}`);
        }
        const name = image.split("/").pop()!;
        const parts: [number, string][] = [];
        for await (const e of Deno.readDir(`/sys/class/block/${name}`)) {
          const m = new RegExp(`^${name}p?(\\d+)$`).exec(e.name);
          if (m) parts.push([Number(m[1]), e.name]);
        }
        parts.sort((a, b) => a[0] - b[0]);
        const first = parts[0];
        if (first === undefined) throw new Error(`the disk ${image} has no partition`);
        this.#firstPartition = await readFirstPartition(
          `/dev/${first[1]}`,
          `/sys/class/block/${name}/${first[1]}/size`,
          config.firstPartitionBound ?? DEFAULT_FIRST_PARTITION_BOUND,
        );
        const layers = parts.slice(1);
        for (const [n, entry] of layers) {
          const head = await run("dumpe2fs", ["-h", `/dev/${entry}`]).catch((e) => {
            throw new Error(
              `the layer in partition ${n} is no ext4 file system: ${e instanceof Error ? e.message : e}`,
            );
          });
          if (/^Filesystem features:.*\bneeds_recovery\b/m.test(head)) {
            throw new Error(`the layer in partition ${n} needs recovery, which the assembly does not run`);
          }
        }
        for (const [n, entry] of layers) {
          const opts = "ro,nosuid,nodev,noload,errors=remount-ro";
          await this.#mount(["-t", "ext4", "-o", opts, `/dev/${entry}`], join(rt, `p${n}`));
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
        const opts = ["mode=0755", ...(this.opts.tmpfsOptions ? [this.opts.tmpfsOptions] : [])].join(",");
        await this.#mount(["-t", "tmpfs", "-o", opts, "tmpfs"], upperBase);
      }
      await Deno.mkdir(join(upperBase, "upper"), { recursive: true });
      await Deno.mkdir(join(upperBase, "work"), { recursive: true });
      const mode = overlayModeOptions(config.overlayMode);
      const opts = `lowerdir=${lowers.join(":")},upperdir=${join(upperBase, "upper")},workdir=${
        join(upperBase, "work")
      },${mode}`;
      await this.#mount(["-t", "overlay", "-o", opts, "overlay"], join(rt, "root"));
      this.#lowers = lowers;
      this.#upper = join(upperBase, "upper");
      this.#fs = new LinuxFs({ staging: join(rt, "staging") });
      this.#mapper = new RootMapper(this.#fs, join(rt, "root"));
    } catch (e) {
      throw new StageFailed("assembly", e instanceof Error ? e.message : String(e), { cause: e });
    }
  }

  get #layers(): Layers {
    return { root: join(this.#runtime, "root"), upper: this.#upper, lowers: this.#lowers };
  }

  probe(p: Probe): Promise<Facts> {
    const fs = this.#fs!;
    const ctx: LinuxProbeContext = {
      config: this.#config!,
      layers: this.#layers,
      mountPoints: this.#mounts.map((m) => [m.split("/").pop()!, m] as const),
      firstPartition: this.#firstPartition,
      sibling: this.opts.sibling,
      mapping: {
        fs,
        root: join(this.#runtime, "root"),
        rootMapper: this.#mapper!,
        sources: this.opts.sourcesDir,
        outside: this.opts.outsideDir,
        pid: Deno.pid,
        attaches: this.opts.attaches,
        upperKind: (path) => fs.lstat(join(this.#upper, path)),
      },
      hold: async () => {
        const root = join(this.#runtime, "root");
        this.#held.push(await Deno.open(root, { read: true }));
        return root;
      },
    };
    const helper = this.opts.entriesHelper;
    if (p.name === "entries" && helper !== undefined) {
      return guestEntryTools().then((tools) =>
        runLinuxProbe({
          ...ctx,
          entries: { root: join(this.#runtime, "root"), cgroup: this.#config!.workloadCgroup, helper, tools },
        }, p)
      );
    }
    return runLinuxProbe(ctx, p);
  }

  async applyMapping(m: Mapping): Promise<void> {
    const dec = new TextDecoder();
    const source = dec.decode(m.source);
    if (!isRelativePath(source)) {
      throw new MappingFailed(`source ${source} is not a relative path of normal components`);
    }
    const exportDir = this.opts.exportDir ?? join(this.#runtime, "export");
    try {
      await this.#mapper!.map([{
        source: join(exportDir, source),
        target: dec.decode(m.target),
        readOnly: m.readOnly,
      }]);
    } catch (e) {
      throw new MappingFailed(e instanceof Error ? e.message : String(e), { cause: e });
    }
  }

  startWorkloads(): Promise<void> {
    this.opts.log.info({ layout: this.#layout?.image.format }, "workloads may start");
    return Promise.resolve();
  }

  async teardown(): Promise<void> {
    try {
      await this.#mapper?.mapper.teardown();
      await this.#fs?.close();
    } catch (e) {
      throw new StageFailed("teardown", e instanceof Error ? e.message : String(e));
    }
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
    const lazy = (m: string) =>
      run("umount", ["-l", m]).catch((e) => this.opts.log.warn({ mount: m, err: String(e) }, "umount failed"));
    for (const t of [...(this.#mapper?.mapper.targets ?? [])].reverse()) await lazy(join(this.#runtime, "root", t));
    if (this.#fs !== null) await this.#fs.close().catch(() => lazy(join(this.#runtime, "staging")));
    while (this.#mounts.length > 0) {
      const m = this.#mounts.pop()!;
      await run("umount", ["-l", m]).catch((e) => this.opts.log.warn({ mount: m, err: String(e) }, "umount failed"));
    }
  }
}

/** Reads a first partition's bytes, refusing one beyond the bound before reading it. */
async function readFirstPartition(dev: string, sizeFile: string, bound: bigint): Promise<Uint8Array> {
  const size = BigInt((await Deno.readTextFile(sizeFile)).trim()) * 512n;
  if (size > bound) throw new Error(`the first partition holds ${size} bytes, beyond its bound of ${bound}`);
  const bytes = new Uint8Array(Number(size));
  using f = await Deno.open(dev, { read: true });
  let n = 0;
  while (n < bytes.length) {
    const got = await f.read(bytes.subarray(n));
    if (got === null) throw new Error(`${dev} ended after ${n} of ${size} bytes`);
    n += got;
  }
  return bytes;
}
