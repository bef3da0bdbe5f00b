/**
 * The real GPU tool: runs `nvidia-smi -q -x` (and `nvidia-smi -L` when a GPU has MIG devices, for their UUIDs),
 * reads each GPU's NUMA node from sysfs (or through the root helper), and resets GPUs with `nvidia-smi --gpu-reset -i <uuid>`.
 *
 * @module
 */
import type { GpuInventory } from "../../core/converge/devices/inventory.ts";
import { type GpuTool, GpuToolError, NoGpuDriver } from "../../core/converge/devices/ports.ts";
import { parseSmiList, withMigUuids } from "./smi_list.ts";
import { parseSmiXml } from "./smi_xml.ts";

/** What running a command gave. */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command with a byte limit on its output (injected in tests). */
export type CommandRunner = (cmd: string, args: readonly string[], opts: { timeoutMs: number }) => Promise<RunResult>;

/** At most this much output is read from nvidia-smi (an 8-GPU `-q -x` is about 200 KiB). */
export const MAX_SMI_OUTPUT = 32 * 1024 * 1024;

/** Runs `cmd` with `Deno.Command`, killing it after `timeoutMs`; output past {@link MAX_SMI_OUTPUT} is an error. */
export async function denoRunner(
  cmd: string,
  args: readonly string[],
  opts: { timeoutMs: number },
): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args: [...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(opts.timeoutMs),
  }).spawn();
  const read = async (s: ReadableStream<Uint8Array>) => {
    const parts: Uint8Array[] = [];
    let n = 0;
    for await (const c of s) {
      n += c.length;
      if (n > MAX_SMI_OUTPUT) throw new GpuToolError(`${cmd} wrote more than ${MAX_SMI_OUTPUT} bytes`);
      parts.push(c);
    }
    const all = new Uint8Array(n);
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.length;
    }
    return new TextDecoder().decode(all);
  };
  try {
    const [stdout, stderr, status] = await Promise.all([read(child.stdout), read(child.stderr), child.status]);
    return { code: status.code, stdout, stderr };
  } catch (e) {
    try {
      child.kill("SIGKILL");
    } catch (k) {
      if (!(k instanceof TypeError)) throw k; // already exited
    }
    throw e;
  }
}

/** Options of {@link NvidiaSmi}. */
export interface NvidiaSmiOptions {
  /** The binary (default `nvidia-smi`). */
  readonly binary?: string;
  /** Where PCI devices are in sysfs (default `/sys/bus/pci/devices`). */
  readonly sysfsPciDevices?: string;
  readonly timeoutMs?: number;
  readonly run?: CommandRunner;
  /**
   * Where a GPU's NUMA node comes from (default: {@link readPciNumaNode} under `sysfsPciDevices`). An unprivileged
   * node asks the root helper: Deno grants sysfs only to `--allow-all`.
   */
  readonly numaNode?: (pciBusId: string) => Promise<number | undefined>;
}

/** A GPU's NUMA node from `<sysfs PCI devices>/<bdf>/numa_node`; `undefined` when absent or -1 (no affinity). */
export async function readPciNumaNode(sysfsPciDevices: string, pciBusId: string): Promise<number | undefined> {
  try {
    const s = (await Deno.readTextFile(`${sysfsPciDevices}/${sysfsBdf(pciBusId)}/numa_node`)).trim();
    return /^\d{1,4}$/.test(s) ? Number(s) : undefined; // -1: no NUMA affinity
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** The sysfs name of an nvidia-smi PCI bus id: `00000000:18:00.0` → `0000:18:00.0`. */
export function sysfsBdf(pciBusId: string): string {
  const [dom, bus, devfn] = pciBusId.split(":") as [string, string, string];
  return `${dom.slice(-4)}:${bus}:${devfn}`.toLowerCase();
}

/** `nvidia-smi` as a {@link GpuTool}. */
export class NvidiaSmi implements GpuTool {
  readonly #bin: string;
  readonly #timeout: number;
  readonly #run: CommandRunner;
  readonly #numaNode: (pciBusId: string) => Promise<number | undefined>;
  constructor(opts: NvidiaSmiOptions = {}) {
    this.#bin = opts.binary ?? "nvidia-smi";
    const sysfs = opts.sysfsPciDevices ?? "/sys/bus/pci/devices";
    this.#timeout = opts.timeoutMs ?? 60_000;
    this.#run = opts.run ?? denoRunner;
    this.#numaNode = opts.numaNode ?? ((id) => readPciNumaNode(sysfs, id));
  }

  async #smi(args: string[]): Promise<string> {
    let r: RunResult;
    try {
      r = await this.#run(this.#bin, args, { timeoutMs: this.#timeout });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new NoGpuDriver(`no NVIDIA driver on this host: ${this.#bin} is not installed`, { cause: e });
      }
      throw e;
    }
    if (r.code !== 0) throw new GpuToolError(_message(r) || `${this.#bin} ${args.join(" ")} exited ${r.code}`);
    return r.stdout;
  }

  /** A fresh inventory. */
  async query(): Promise<GpuInventory> {
    let inv = parseSmiXml(await this.#smi(["-q", "-x"]));
    if (inv.gpus.some((g) => g.migInstances.length > 0)) inv = withMigUuids(inv, parseSmiList(await this.#smi(["-L"])));
    const gpus = await Promise.all(inv.gpus.map(async (g) => {
      const numa = await this.#numaNode(g.pciBusId);
      return numa === undefined ? g : { ...g, numaNode: numa };
    }));
    return { ...inv, gpus };
  }

  /** `nvidia-smi --gpu-reset -i <uuid>`. */
  async reset(gpuUuid: string): Promise<void> {
    await this.#smi(["--gpu-reset", "-i", gpuUuid]);
  }
}

function _message(r: RunResult): string {
  const text = (r.stderr.trim() || r.stdout.trim()).split("\n").filter((l) => l.trim() !== "");
  return text.slice(0, 3).join(" ").slice(0, 500);
}
