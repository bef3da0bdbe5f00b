/**
 * The host readings of the balloon loop from procfs: `/proc/meminfo` and `/proc/pressure/memory` (000 §Memory
 * ballooning). The root helper reads them for the node (`host.memory_pressure`); the root is configurable so tests
 * run on trees. A host without PSI (no `pressure/memory`, or a kernel booted with `psi=0`, where reading it fails with
 * `EOPNOTSUPP`) reads `someAvg10: null`.
 *
 * @module
 */
import type { HostPressure } from "../../core/balloon/policy.ts";
import {
  MAX_MEMINFO_CHARS,
  MAX_PSI_CHARS,
  type MemoryPressureSource,
  parseMemoryPressure,
} from "../../core/balloon/pressure.ts";

async function _readBounded(path: string, max: number): Promise<string> {
  const f = await Deno.open(path);
  try {
    const buf = new Uint8Array(max + 1);
    let n = 0;
    for (;;) {
      const r = await f.read(buf.subarray(n));
      if (r === null) break;
      n += r;
      if (n > max) throw new RangeError(`${path} exceeds ${max} bytes`);
    }
    return new TextDecoder().decode(buf.subarray(0, n));
  } finally {
    f.close();
  }
}

/** Reads the balloon loop's host readings from procfs. */
export class ProcMemoryPressure implements MemoryPressureSource {
  constructor(private readonly proc = "/proc") {}

  async read(): Promise<HostPressure> {
    const meminfo = await _readBounded(`${this.proc}/meminfo`, MAX_MEMINFO_CHARS);
    let psi: string | undefined;
    try {
      psi = await _readBounded(`${this.proc}/pressure/memory`, MAX_PSI_CHARS);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotSupported)) throw e;
    }
    return parseMemoryPressure(meminfo, psi);
  }
}
