/**
 * The real `dcgmi diag` the helper runs for `diag.dcgm`: it maps the GPU UUIDs to DCGM's GPU ids through
 * `nvidia-smi --query-gpu=index,uuid --format=csv,noheader` (DCGM enumerates GPUs through NVML, so its GPU ids are
 * the NVML indices), then runs `dcgmi diag -r <level> -j [-i <ids>]` and hands back its exit status (non-zero when a
 * test failed, the document still on stdout), its stdout, the start of its stderr, and the id ↔ UUID map. A host
 * without dcgmi answers `null`; one without nvidia-smi fails with `no-gpu-driver`'s words.
 *
 * @module
 */
import { type DcgmLevel, type DcgmRun, MAX_DCGM_JSON } from "../../core/converge/devices/diag_dcgm.ts";
import { GpuToolError, NoGpuDriver } from "../../core/converge/devices/ports.ts";
import { type CommandRunner, denoRunner } from "./nvidia_smi.ts";

/** Options of {@link Dcgmi}. */
export interface DcgmiOptions {
  /** The dcgmi binary (default `dcgmi`). */
  readonly dcgmi?: string;
  /** The nvidia-smi binary (default `nvidia-smi`). */
  readonly nvidiaSmi?: string;
  /** How long one diag may run (default just under the kind's hour). */
  readonly timeoutMs?: number;
  readonly run?: CommandRunner;
}

/** Parses `nvidia-smi --query-gpu=index,uuid --format=csv,noheader` lines. */
export function parseIndexUuid(text: string): { id: number; uuid: string }[] {
  const out: { id: number; uuid: string }[] = [];
  for (const line of text.split("\n")) {
    const t = line.trim();
    if (t === "") continue;
    const m = /^(\d{1,3}),\s*(GPU-[0-9A-Za-z-]{1,96})$/.exec(t);
    if (!m) throw new GpuToolError(`nvidia-smi --query-gpu=index,uuid wrote an unexpected line: ${t.slice(0, 120)}`);
    out.push({ id: Number(m[1]), uuid: m[2]! });
  }
  return out;
}

/** `dcgmi diag` on a host. */
export class Dcgmi {
  readonly #dcgmi: string;
  readonly #smi: string;
  readonly #timeout: number;
  readonly #run: CommandRunner;
  constructor(opts: DcgmiOptions = {}) {
    this.#dcgmi = opts.dcgmi ?? "dcgmi";
    this.#smi = opts.nvidiaSmi ?? "nvidia-smi";
    this.#timeout = opts.timeoutMs ?? 3_540_000;
    this.#run = opts.run ?? denoRunner;
  }

  async #gpus(): Promise<{ id: number; uuid: string }[]> {
    let r;
    try {
      r = await this.#run(this.#smi, ["--query-gpu=index,uuid", "--format=csv,noheader"], { timeoutMs: 60_000 });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new NoGpuDriver(`${this.#smi} is not installed`, { cause: e });
      throw e;
    }
    if (r.code !== 0) throw new GpuToolError(`nvidia-smi exited ${r.code}: ${r.stderr.trim().slice(0, 512)}`);
    return parseIndexUuid(r.stdout);
  }

  /** Runs the diag; `null` when dcgmi is not installed. */
  async diag(level: DcgmLevel, gpuUuids: readonly string[]): Promise<DcgmRun | null> {
    const all = await this.#gpus();
    const asked = gpuUuids.map((u) => {
      const g = all.find((x) => x.uuid === u);
      if (!g) throw new GpuToolError(`GPU ${u} is not on this host`);
      return g;
    });
    const args = [
      "diag",
      "-r",
      String(level),
      "-j",
      ...(asked.length > 0 ? ["-i", asked.map((g) => g.id).join(",")] : []),
    ];
    let r;
    try {
      r = await this.#run(this.#dcgmi, args, { timeoutMs: this.#timeout });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
    if (r.stdout.length > MAX_DCGM_JSON) {
      throw new GpuToolError(`dcgmi diag wrote more than ${MAX_DCGM_JSON} bytes`);
    }
    return {
      exitCode: r.code,
      stdout: r.stdout,
      stderr: r.stderr.trim().slice(0, 512),
      gpus: asked.length > 0 ? asked : all,
    };
  }
}
