/**
 * The sim role's GPU tool: a simulated board whose state lives in one JSON file, answered through the same
 * `nvidia-smi -q -x` / `-L` text and parsers as a real host. A reset clears the GPU's volatile ECC counters, its
 * required reset and recovery action, and settles a pending row remap (a failed remap stays), as the driver does; `resetFailures` makes a reset fail with
 * nvidia-smi's message.
 *
 * @module
 */
import type { GpuInfo, GpuInventory } from "../../core/converge/devices/inventory.ts";
import { type GpuTool, GpuToolError } from "../../core/converge/devices/ports.ts";
import { hgxInventory } from "./hgx.ts";
import { parseSmiList, withMigUuids } from "./smi_list.ts";
import { renderSmiList, renderSmiXml } from "./smi_render.ts";
import { parseSmiXml } from "./smi_xml.ts";
import { settled } from "../../core/settled.ts";

/** What the state file holds. */
export interface FakeGpuState {
  inventory: GpuInventory;
  /** GPU UUID → the message its next resets fail with. */
  resetFailures?: Record<string, string>;
  /** Every reset, in order. */
  resets?: string[];
  /** How long each query and reset takes, ms (a slow board; e2e tests kill the daemon meanwhile). */
  delayMs?: number;
}

const _sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The largest state file read. */
const _MAX_STATE = 4 * 1024 * 1024;

/** Read-modify-write of one state file at a time in this process (commands run on several lane workers). */
const _locks = new Map<string, Promise<unknown>>();
async function _serialized<T>(path: string, f: () => Promise<T>): Promise<T> {
  const prev = _locks.get(path) ?? Promise.resolve();
  const next = prev.then(f, f);
  const tail = settled(next);
  _locks.set(path, tail);
  try {
    return await next;
  } finally {
    if (_locks.get(path) === tail) _locks.delete(path);
  }
}

/** A file-backed fake of `nvidia-smi`. */
export class FakeGpuTool implements GpuTool {
  constructor(readonly path: string) {}

  /** Creates the state file with an HGX board (MIG on GPUs 2 and 5) unless it exists. */
  static async create(path: string, inventory: GpuInventory = hgxInventory()): Promise<FakeGpuTool> {
    const t = new FakeGpuTool(path);
    try {
      await Deno.stat(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      await t.write({ inventory });
    }
    return t;
  }

  /** Reads the state file. */
  async read(): Promise<FakeGpuState> {
    const f = await Deno.open(this.path);
    try {
      const st = await f.stat();
      if (st.size > _MAX_STATE) throw new GpuToolError(`fake GPU state ${this.path} exceeds ${_MAX_STATE} bytes`);
      const buf = new Uint8Array(st.size);
      let n = 0;
      while (n < buf.length) {
        const r = await f.read(buf.subarray(n));
        if (r === null) break;
        n += r;
      }
      return JSON.parse(new TextDecoder().decode(buf.subarray(0, n))) as FakeGpuState;
    } finally {
      f.close();
    }
  }

  /** Writes the state file atomically. */
  async write(state: FakeGpuState): Promise<void> {
    const tmp = `${this.path}.tmp-${crypto.randomUUID()}`;
    await Deno.writeTextFile(tmp, JSON.stringify(state, null, 1));
    await Deno.rename(tmp, this.path);
  }

  /** Changes one GPU in the state (for tests and sim scenarios: inject ECC errors, a pending remap). */
  update(uuid: string, f: (g: GpuInfo) => GpuInfo): Promise<void> {
    return _serialized(this.path, async () => {
      const s = await this.read();
      s.inventory = { ...s.inventory, gpus: s.inventory.gpus.map((g) => g.uuid === uuid ? f(g) : g) };
      await this.write(s);
    });
  }

  async query(): Promise<GpuInventory> {
    const s = await this.read();
    if (s.delayMs) await _sleep(s.delayMs);
    const inv = withMigUuids(parseSmiXml(renderSmiXml(s.inventory)), parseSmiList(renderSmiList(s.inventory)));
    const numa = new Map(s.inventory.gpus.map((g) => [g.uuid, g.numaNode]));
    return {
      ...inv,
      gpus: inv.gpus.map((g) => numa.get(g.uuid) === undefined ? g : { ...g, numaNode: numa.get(g.uuid) }),
    };
  }

  reset(gpuUuid: string): Promise<void> {
    return _serialized(this.path, () => this.#reset(gpuUuid));
  }

  async #reset(gpuUuid: string): Promise<void> {
    const slow = (await this.read()).delayMs;
    if (slow) await _sleep(slow);
    const s = await this.read();
    (s.resets ??= []).push(gpuUuid);
    const fail = s.resetFailures?.[gpuUuid];
    const known = s.inventory.gpus.some((g) => g.uuid === gpuUuid);
    if (known && !fail) {
      s.inventory = {
        ...s.inventory,
        gpus: s.inventory.gpus.map((g) =>
          g.uuid === gpuUuid
            ? {
              ...g,
              eccVolatileUncorrectable: g.eccVolatileUncorrectable === undefined ? undefined : 0,
              remap: g.remap ? { pending: false, failed: g.remap.failed } : undefined,
              resetRequired: g.resetRequired === undefined ? undefined : false,
              recoveryAction: g.recoveryAction === undefined ? undefined : "None",
            }
            : g
        ),
      };
    }
    await this.write(s);
    if (!known) throw new GpuToolError("No devices were found");
    if (fail) throw new GpuToolError(fail);
  }
}
