/**
 * The `mig-layout` unit's host half, run by the root helper (`core/host/mig_layout.ts`): each GPU's MIG mode and
 * GPU instances from `nvidia-smi -q -x` and `-L` (a GPU instance is the MIG devices sharing its `gpu_instance_id`; its
 * profile is `-L`'s, less a compute-instance prefix such as `1c.`), changes through `nvidia-smi mig`:
 * `-i <GPU> -cgi <profile> -C` (the instance and its default compute instance), `-i <GPU> -gi <N> -ci <M> -dci` for
 * each compute instance, then `-i <GPU> -gi <N> -dgi`. Every argv is built here from checked values.
 *
 * bcd's record of the GPU instances it made is `bcd/host/mig-layout.json` under the helper's `/etc` root, written
 * after each create and each destroy (a crash between nvidia-smi and the write leaves one instance bcd made
 * unrecorded, which bcd then never removes by itself: the safe side).
 *
 * @module
 */
import {
  isGpuUuid,
  type MigApplied,
  type MigInstance,
  type MigObserved,
  type MigPort,
  type MigStep,
} from "../../core/host/mod.ts";
import { GpuToolError } from "../../core/converge/devices/ports.ts";
import { type CommandRunner, denoRunner, NvidiaSmi } from "../nvidia/nvidia_smi.ts";

/** bcd's record of the GPU instances it made, under the helper's /etc root. */
export const MIG_RECORD = "bcd/host/mig-layout.json";
const _MAX_RECORD = 256 * 1024;

/** Options of {@link SmiMig}. */
export interface SmiMigOptions {
  /** `nvidia-smi` (default on `PATH`). */
  readonly nvidiaSmi?: string;
  /** Default `/etc`. */
  readonly etc?: string;
  readonly run?: CommandRunner;
  readonly timeoutMs?: number;
}

type _Managed = { gpu: string; gi: number };

/** The real MIG port. */
export class SmiMig implements MigPort {
  readonly record: string;
  readonly #bin: string;
  readonly #run: CommandRunner;
  readonly #timeout: number;

  constructor(opts: SmiMigOptions = {}) {
    this.record = `${opts.etc ?? "/etc"}/${MIG_RECORD}`;
    this.#bin = opts.nvidiaSmi ?? "nvidia-smi";
    this.#run = opts.run ?? denoRunner;
    this.#timeout = opts.timeoutMs ?? 120_000;
  }

  async #managed(): Promise<_Managed[]> {
    let text: string;
    try {
      const st = await Deno.stat(this.record);
      if (st.size > _MAX_RECORD) throw new RangeError(`${this.record} is ${st.size} bytes, more than ${_MAX_RECORD}`);
      text = await Deno.readTextFile(this.record);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return [];
      throw e;
    }
    const v = JSON.parse(text) as unknown;
    if (!Array.isArray(v)) throw new RangeError(`${this.record} is not a list`);
    return v.filter((m): m is _Managed =>
      typeof m === "object" && m !== null && isGpuUuid(m.gpu) && Number.isSafeInteger(m.gi) && m.gi >= 0
    );
  }

  async #writeManaged(m: readonly _Managed[]): Promise<void> {
    const dir = this.record.slice(0, this.record.lastIndexOf("/"));
    await Deno.mkdir(dir, { recursive: true });
    const tmp = `${this.record}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify(m) + "\n", { mode: 0o644 });
    await Deno.rename(tmp, this.record);
  }

  async read(): Promise<MigObserved> {
    let gpus: MigObserved["gpus"] = [];
    try {
      const inv = await new NvidiaSmi({ binary: this.#bin, run: this.#run, numaNode: () => Promise.resolve(undefined) })
        .query();
      gpus = inv.gpus.map((g) => {
        const byGi = new Map<number, MigInstance>();
        for (const d of g.migInstances) {
          const cur = byGi.get(d.gi);
          const profile = (d.profile ?? "").replace(/^\d+c\./, "");
          byGi.set(d.gi, { gi: d.gi, profile: cur?.profile || profile, cis: [...(cur?.cis ?? []), d.ci].sort() });
        }
        return {
          uuid: g.uuid,
          migEnabled: g.migMode === "Enabled",
          instances: [...byGi.values()].sort((a, b) => a.gi - b.gi),
        };
      });
    } catch (e) {
      // No driver (or no nvidia-smi): no GPUs, so any GPU the layout lists is "not on this host".
      if (!(e instanceof GpuToolError)) throw e;
    }
    const present = new Set(gpus.flatMap((g) => g.instances.map((i) => `${g.uuid}/gi${i.gi}`)));
    return { gpus, managed: (await this.#managed()).filter((m) => present.has(`${m.gpu}/gi${m.gi}`)) };
  }

  /** Runs `nvidia-smi mig …`; its words when it failed. */
  async #mig(args: readonly string[]): Promise<{ out: string; failure?: string }> {
    let r;
    try {
      r = await this.#run(this.#bin, ["mig", ...args], { timeoutMs: this.#timeout });
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { out: "", failure: `${this.#bin} is not installed` };
      throw e;
    }
    if (r.code === 0) return { out: r.stdout };
    const words = (r.stderr.trim() || r.stdout.trim() || `exit ${r.code}`).replaceAll(/\s*\n\s*/g, "; ").slice(0, 500);
    return { out: r.stdout, failure: `nvidia-smi mig ${args.join(" ")}: ${words}` };
  }

  async apply(steps: readonly MigStep[]): Promise<MigApplied> {
    const fail = async (failure: string) => ({ observed: await this.read(), failure });
    for (const s of steps) {
      if (!isGpuUuid(s.gpu)) throw new RangeError(`${JSON.stringify(s.gpu)} is not a GPU UUID`);
      if (s.op === "destroy") {
        for (const ci of s.cis) {
          const r = await this.#mig(["-i", s.gpu, "-gi", String(s.gi), "-ci", String(ci), "-dci"]);
          if (r.failure) return await fail(r.failure);
        }
        const r = await this.#mig(["-i", s.gpu, "-gi", String(s.gi), "-dgi"]);
        if (r.failure) return await fail(r.failure);
        await this.#writeManaged((await this.#managed()).filter((m) => !(m.gpu === s.gpu && m.gi === s.gi)));
        continue;
      }
      const r = await this.#mig(["-i", s.gpu, "-cgi", s.profile, "-C"]);
      if (r.failure) return await fail(r.failure);
      const gi = /created GPU instance ID\s+(\d+)/i.exec(r.out)?.[1];
      if (gi === undefined) return await fail(`nvidia-smi mig -cgi ${s.profile}: no GPU instance id in its answer`);
      await this.#writeManaged([...await this.#managed(), { gpu: s.gpu, gi: Number(gi) }]);
    }
    return { observed: await this.read() };
  }
}
