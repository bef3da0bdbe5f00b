/**
 * The node's host ports over the root helper: the same interfaces the direct runtimes implement (`HoldStore`,
 * `SliceManager`, `HostMemorySource`, `HostInventoryReader`, `Rebooter`, `GpuTool` and the boot id), each op a
 * request to the helper. A refused or failed request is a {@link HelperError} (`helper: …`), which the devices
 * converger treats like a failed direct write: retryable. `GpuTool.query` still runs `nvidia-smi` in the node (Deno
 * does not restrict what a subprocess reads); only the GPUs' NUMA nodes, from sysfs, come from the helper.
 *
 * @module
 */
import type { HostInventory, HostInventoryReader, Rebooter } from "../../core/commands/kind_handlers/mod.ts";
import type { HostMemory } from "../../core/converge/devices/admission.ts";
import type { HostPressure } from "../../core/balloon/policy.ts";
import type { MemoryPressureSource } from "../../core/balloon/pressure.ts";
import type { HoldRecord } from "../../core/converge/devices/hold.ts";
import type { GpuInventory } from "../../core/converge/devices/inventory.ts";
import {
  DcgmKindError,
  type DcgmLevel,
  type DcgmRun,
  type DcgmTool,
  MAX_DCGM_JSON,
} from "../../core/converge/devices/diag_dcgm.ts";
import {
  type GpuTool,
  GpuToolError,
  type HoldListing,
  type HoldStore,
  type HostMemorySource,
  PageSizeUnsupported,
  type SliceManager,
  type SliceRemoval,
} from "../../core/converge/devices/ports.ts";
import type { SliceSettings } from "../../core/converge/devices/slice.ts";
import { HelperError } from "../../core/helper/mod.ts";
import type { NvidiaSmi, NvidiaSmiOptions } from "../nvidia/nvidia_smi.ts";
import type { HelperClient } from "./client.ts";
import { loadOnce } from "../../core/util/load_once.ts";

function _expect(ok: boolean, op: string, what: string): void {
  if (!ok) throw new HelperError("malformed", `${op}: the answer's ${what}`);
}

const _isStrings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string");

/** CDI specs and env files, written and removed by the helper. */
export class HelperHoldStore implements HoldStore {
  constructor(private readonly c: HelperClient) {}

  async list(): Promise<HoldListing> {
    const l = await this.c.call("holds.list", {});
    _expect(Array.isArray(l.holds) && Array.isArray(l.unreadable) && _isStrings(l.envFiles), "holds.list", "lists");
    return l;
  }

  /** The env file, then the spec (the order of the direct store: a spec never names an env file not yet there). */
  async write(r: HoldRecord): Promise<void> {
    await this.c.call("file.write", { kind: "allocation-env", allocationId: r.allocationId, env: [...r.env] });
    await this.c.call("file.write", {
      kind: "cdi",
      allocationId: r.allocationId,
      binding: r.binding,
      devices: r.devices.map((d) => ({
        class: d.class,
        atom: d.atom,
        gpuUuid: d.gpuUuid,
        cdiName: d.cdiName,
        ...(d.minorNumber !== undefined ? { minorNumber: d.minorNumber } : {}),
      })),
      env: [...r.env],
      ...(r.cgroupParent !== undefined ? { cgroupParent: r.cgroupParent } : {}),
    });
  }

  async remove(allocationId: string): Promise<void> {
    await this.c.call("file.remove", { kind: "cdi", allocationId });
    await this.c.call("file.remove", { kind: "allocation-env", allocationId });
  }

  async removeEnv(allocationId: string): Promise<void> {
    await this.c.call("file.remove", { kind: "allocation-env", allocationId });
  }
}

/** Hold slices, made and stopped by the helper. */
export class HelperSliceManager implements SliceManager {
  constructor(private readonly c: HelperClient) {}

  async apply(name: string, settings: SliceSettings): Promise<void> {
    try {
      await this.c.call("slice.apply", { name, settings });
    } catch (e) {
      // The helper's slice manager found a huge page size the host lacks: as terminal here as there.
      if (e instanceof HelperError && e.code === "unsupported") throw new PageSizeUnsupported(e.message, { cause: e });
      throw e;
    }
  }

  async list(): Promise<string[]> {
    const r = await this.c.call("slice.list", {});
    _expect(_isStrings(r.names), "slice.list", "names");
    return [...r.names];
  }

  async remove(name: string): Promise<SliceRemoval> {
    const r = await this.c.call("slice.remove", { name });
    _expect(["removed", "busy", "absent"].includes(r.removal), "slice.remove", "removal");
    return r.removal;
  }

  async hugetlbUsage(name: string): Promise<{ bytes2MB: number; bytes1GB: number } | undefined> {
    const r = await this.c.call("slice.usage", { name });
    if (r.usage === null) return undefined;
    _expect(typeof r.usage?.bytes2MB === "number" && typeof r.usage.bytes1GB === "number", "slice.usage", "usage");
    return { bytes2MB: r.usage.bytes2MB, bytes1GB: r.usage.bytes1GB };
  }
}

/** The balloon loop's host readings (`/proc/meminfo`, `/proc/pressure/memory`), read by the helper. */
export class HelperMemoryPressure implements MemoryPressureSource {
  constructor(private readonly c: HelperClient) {}
  async read(): Promise<HostPressure> {
    const m = await this.c.call("host.memory_pressure", {});
    const bytes = (v: unknown) => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
    _expect(bytes(m.memTotalBytes) && m.memTotalBytes > 0, "host.memory_pressure", "memTotalBytes");
    _expect(bytes(m.memAvailableBytes), "host.memory_pressure", "memAvailableBytes");
    _expect(
      m.someAvg10 === null || (typeof m.someAvg10 === "number" && m.someAvg10 >= 0 && m.someAvg10 <= 100),
      "host.memory_pressure",
      "someAvg10",
    );
    return { memTotalBytes: m.memTotalBytes, memAvailableBytes: m.memAvailableBytes, someAvg10: m.someAvg10 };
  }
}

/** `/proc/meminfo` and the huge page pools, read by the helper. */
export class HelperHostMemory implements HostMemorySource {
  constructor(private readonly c: HelperClient) {}
  async read(): Promise<HostMemory> {
    const m = await this.c.call("host.memory", {});
    _expect(typeof m.memTotalBytes === "number", "host.memory", "memTotalBytes");
    const sizes: unknown = m.hugePageSizes;
    _expect(
      sizes === undefined || (Array.isArray(sizes) && sizes.length <= 64 && sizes.every(Number.isSafeInteger)),
      "host.memory",
      "hugePageSizes",
    );
    return m;
  }
}

/** The host inventory of `inventory.refresh`, read from /proc, /sys and /etc by the helper. */
export class HelperHostInventory implements HostInventoryReader {
  constructor(private readonly c: HelperClient) {}
  async read(): Promise<HostInventory> {
    const inv = await this.c.call("host.inventory", {});
    _expect(typeof inv.hostname === "string", "host.inventory", "hostname");
    return inv;
  }
}

/** `node.reboot` through the helper's init system. */
export class HelperRebooter implements Rebooter {
  constructor(private readonly c: HelperClient) {}
  async reboot(reason: string): Promise<void> {
    await this.c.call("node.reboot", { reason });
  }
}

/** The kernel's boot id, read by the helper (the journal's crash recovery depends on it). */
export async function helperBootId(c: HelperClient): Promise<string> {
  const { bootId } = await c.call("host.boot_id", {});
  _expect(typeof bootId === "string" && bootId.length > 0 && bootId.length <= 128, "host.boot_id", "boot id");
  return bootId;
}

/**
 * `nvidia-smi` run by the node for queries, with NUMA nodes and `--gpu-reset` through the helper. Its output's parsers
 * (`runtimes/nvidia`, ~20 KB of source) load with the first query, not at the daemon's start (issue 24).
 */
export class HelperGpuTool implements GpuTool {
  readonly #c: HelperClient;
  readonly #smi: () => Promise<NvidiaSmi>;
  constructor(c: HelperClient, opts: Omit<NvidiaSmiOptions, "numaNode" | "sysfsPciDevices"> = {}) {
    this.#c = c;
    const smiOpts: NvidiaSmiOptions = {
      ...opts,
      numaNode: async (pciBusId) => (await c.call("pci.numa_node", { pciBusId })).numaNode ?? undefined,
    };
    // A load that fails fails that query (the converger retries) and the next one loads again.
    this.#smi = loadOnce(() => import("../nvidia/nvidia_smi.ts").then(({ NvidiaSmi }) => new NvidiaSmi(smiOpts)));
  }

  async query(): Promise<GpuInventory> {
    return (await this.#smi()).query();
  }

  /** A refusal or the tool's failure is a {@link GpuToolError} (the reset's per-GPU outcome); losing the helper is not. */
  async reset(gpuUuid: string): Promise<void> {
    try {
      await this.#c.call("gpu.reset", { gpuUuid });
    } catch (e) {
      if (e instanceof HelperError && (e.code === "failed" || e.code === "invalid-argument")) {
        throw new GpuToolError(e.message, { cause: e });
      }
      throw e;
    }
  }
}

/**
 * `dcgmi diag` through the helper (`dcgm.diag`): the answer is checked before use; the helper's refusal or dcgmi's
 * failure is `dcgm-failed` with its words, losing the helper is not.
 */
export class HelperDcgm implements DcgmTool {
  readonly #c: HelperClient;
  constructor(c: HelperClient) {
    this.#c = c;
  }

  async diag(level: DcgmLevel, gpuUuids: readonly string[]): Promise<DcgmRun | null> {
    let run: DcgmRun | null;
    try {
      ({ run } = await this.#c.call("dcgm.diag", { level, gpuUuids }));
    } catch (e) {
      if (e instanceof HelperError && (e.code === "failed" || e.code === "invalid-argument")) {
        throw new DcgmKindError("dcgm-failed", `diag.dcgm: ${e.message}`, { cause: e });
      }
      throw e;
    }
    if (run === null) return null;
    _expect(
      typeof run === "object" && Number.isInteger(run.exitCode) && typeof run.stdout === "string" &&
        run.stdout.length <= MAX_DCGM_JSON && typeof run.stderr === "string" && Array.isArray(run.gpus) &&
        run.gpus.length <= 64 &&
        run.gpus.every((g) => Number.isInteger(g?.id) && typeof g?.uuid === "string" && g.uuid.length <= 128),
      "dcgm.diag",
      "run",
    );
    return run;
  }
}
