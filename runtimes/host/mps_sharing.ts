/**
 * The `gpu-sharing` unit's host half, run by the root helper (`core/host/gpu_sharing.ts`): compute modes through
 * `nvidia-smi --query-gpu=uuid,compute_mode --format=csv,noheader` and `nvidia-smi -i <GPU> -c <MODE>`, the MPS
 * control daemon through `nvidia-cuda-mps-control` with `CUDA_MPS_PIPE_DIRECTORY` bcd's fixed `/run/nvidia-mps`
 * (the directory the devices section names to slot holds) and `CUDA_MPS_LOG_DIRECTORY` `/var/log/nvidia-mps`:
 * `-d` starts it for `CUDA_VISIBLE_DEVICES` the set, `get_server_list` on its stdin tells whether it answers,
 * `set_default_active_thread_percentage N` and `quit` likewise. The pipe directory is made before a start and
 * removed after a stop.
 *
 * bcd's record (`bcd/host/gpu-sharing.json` under the helper's `/etc` root) holds the daemon it started (set and
 * percentage) and each compute mode before bcd first set it; it is written before a change and updated after.
 *
 * @module
 */
import {
  isGpuUuid,
  MPS_COMPUTE_MODE,
  type SharingApplied,
  type SharingObserved,
  type SharingPort,
  type SharingStep,
} from "../../core/host/mod.ts";

/** bcd's record, under the helper's /etc root. */
export const SHARING_RECORD = "bcd/host/gpu-sharing.json";
const _MAX_RECORD = 64 * 1024;
const _MODES: Readonly<Record<string, string>> = {
  "Default": "DEFAULT",
  "Exclusive_Process": "EXCLUSIVE_PROCESS",
  "Prohibited": "PROHIBITED",
};

/** Options of {@link MpsSharing}. */
export interface MpsSharingOptions {
  readonly nvidiaSmi?: string;
  readonly mpsControl?: string;
  /** Default `/etc`. */
  readonly etc?: string;
  /** Default `/run/nvidia-mps`. */
  readonly pipeDirectory?: string;
  /** Default `/var/log/nvidia-mps`. */
  readonly logDirectory?: string;
}

interface _Record {
  mps?: { gpus: string[]; activeThreadPercentage?: number };
  computeModes: Record<string, string>;
}

async function _run(bin: string, args: readonly string[], opts: { stdin?: string; env?: Record<string, string> } = {}) {
  try {
    const child = new Deno.Command(bin, {
      args: [...args],
      stdin: opts.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
      ...(opts.env ? { env: opts.env } : {}),
    }).spawn();
    if (opts.stdin !== undefined) {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(opts.stdin));
      await w.close();
    }
    const o = await child.output();
    const d = new TextDecoder();
    return { code: o.code, stdout: d.decode(o.stdout), stderr: d.decode(o.stderr) };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { code: 127, stdout: "", stderr: `${bin} is not installed` };
    throw e;
  }
}

function _words(r: { code: number; stdout: string; stderr: string }): string {
  return (r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`).replaceAll(/\s*\n\s*/g, "; ").slice(0, 500);
}

/** The real sharing port. */
export class MpsSharing implements SharingPort {
  readonly record: string;
  readonly #smi: string;
  readonly #ctl: string;
  readonly #pipes: string;
  readonly #logs: string;

  constructor(opts: MpsSharingOptions = {}) {
    this.record = `${opts.etc ?? "/etc"}/${SHARING_RECORD}`;
    this.#smi = opts.nvidiaSmi ?? "nvidia-smi";
    this.#ctl = opts.mpsControl ?? "nvidia-cuda-mps-control";
    this.#pipes = opts.pipeDirectory ?? "/run/nvidia-mps";
    this.#logs = opts.logDirectory ?? "/var/log/nvidia-mps";
  }

  async #readRecord(): Promise<_Record> {
    try {
      const st = await Deno.stat(this.record);
      if (st.size > _MAX_RECORD) throw new RangeError(`${this.record} is ${st.size} bytes, more than ${_MAX_RECORD}`);
      const v = JSON.parse(await Deno.readTextFile(this.record)) as _Record;
      return { ...(v.mps ? { mps: v.mps } : {}), computeModes: v.computeModes ?? {} };
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { computeModes: {} };
      throw e;
    }
  }

  async #writeRecord(r: _Record): Promise<void> {
    await Deno.mkdir(this.record.slice(0, this.record.lastIndexOf("/")), { recursive: true });
    const tmp = `${this.record}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify(r) + "\n", { mode: 0o644 });
    await Deno.rename(tmp, this.record);
  }

  #env(): Record<string, string> {
    return { CUDA_MPS_PIPE_DIRECTORY: this.#pipes, CUDA_MPS_LOG_DIRECTORY: this.#logs };
  }

  async read(): Promise<SharingObserved> {
    const r = await _run(this.#smi, ["--query-gpu=uuid,compute_mode", "--format=csv,noheader"]);
    const gpus: { uuid: string; computeMode: string }[] = [];
    if (r.code === 0) {
      for (const line of r.stdout.split("\n")) {
        const [uuid, mode] = line.split(",").map((x) => x.trim());
        if (isGpuUuid(uuid) && mode) gpus.push({ uuid, computeMode: mode });
      }
    }
    const running = (await _run(this.#ctl, [], { stdin: "get_server_list\n", env: this.#env() })).code === 0;
    const rec = await this.#readRecord();
    return {
      gpus,
      mpsRunning: running,
      ...(rec.mps && running ? { mpsStarted: rec.mps } : {}),
      computeModes: rec.computeModes,
    };
  }

  async apply(steps: readonly SharingStep[]): Promise<SharingApplied> {
    const fail = async (failure: string) => ({ observed: await this.read(), failure });
    const rec = await this.#readRecord();
    const modes = new Map((await this.read()).gpus.map((g) => [g.uuid, g.computeMode]));
    for (const s of steps) {
      if (s.op === "mps-stop") {
        const r = await _run(this.#ctl, [], { stdin: "quit\n", env: this.#env() });
        if (r.code !== 0) return await fail(`nvidia-cuda-mps-control quit: ${_words(r)}`);
        delete rec.mps;
        await this.#writeRecord(rec);
        await Deno.remove(this.#pipes, { recursive: true }).catch((e) => {
          if (!(e instanceof Deno.errors.NotFound)) throw e;
        });
        continue;
      }
      if (s.op === "compute-mode" || s.op === "restore-compute-mode") {
        if (!isGpuUuid(s.gpu)) throw new RangeError(`${JSON.stringify(s.gpu)} is not a GPU UUID`);
        const want = s.op === "compute-mode" ? MPS_COMPUTE_MODE : rec.computeModes[s.gpu] ?? "Default";
        if (s.op === "compute-mode" && rec.computeModes[s.gpu] === undefined) {
          rec.computeModes[s.gpu] = modes.get(s.gpu) ?? "Default";
          await this.#writeRecord(rec);
        }
        const r = await _run(this.#smi, ["-i", s.gpu, "-c", _MODES[want] ?? "DEFAULT"]);
        if (r.code !== 0) return await fail(`nvidia-smi -i ${s.gpu} -c ${_MODES[want] ?? "DEFAULT"}: ${_words(r)}`);
        if (s.op === "restore-compute-mode") {
          delete rec.computeModes[s.gpu];
          await this.#writeRecord(rec);
        }
        continue;
      }
      if (!s.gpus.every(isGpuUuid)) throw new RangeError("mps-start: a GPU that is not a GPU UUID");
      await Deno.mkdir(this.#pipes, { recursive: true, mode: 0o755 });
      await Deno.mkdir(this.#logs, { recursive: true, mode: 0o755 });
      const r = await _run(this.#ctl, ["-d"], { env: { ...this.#env(), CUDA_VISIBLE_DEVICES: s.gpus.join(",") } });
      if (r.code !== 0) return await fail(`nvidia-cuda-mps-control -d: ${_words(r)}`);
      rec.mps = {
        gpus: [...s.gpus],
        ...(s.activeThreadPercentage ? { activeThreadPercentage: s.activeThreadPercentage } : {}),
      };
      await this.#writeRecord(rec);
      if (s.activeThreadPercentage !== undefined) {
        const p = await _run(this.#ctl, [], {
          stdin: `set_default_active_thread_percentage ${s.activeThreadPercentage}\n`,
          env: this.#env(),
        });
        if (p.code !== 0) return await fail(`set_default_active_thread_percentage: ${_words(p)}`);
      }
    }
    return { observed: await this.read() };
  }
}
