/**
 * The helper's operations over its backends: a checked request in, a result out. Requests that change the hold
 * state (`file.*`, `slice.apply`, `slice.remove`) run one at a time; reads, `gpu.reset` and `node.reboot` do not
 * wait for them. A runtime's failure becomes {@link HelperError} `failed` with the runtime's message.
 *
 * @module
 */
import { HelperError, type HelperRequest } from "../../core/helper/mod.ts";
import { PageSizeUnsupported } from "../../core/converge/devices/ports.ts";
import type { HelperBackends } from "./backends.ts";

/** A one-at-a-time lock (a promise chain). */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  /** Runs `f` once every earlier holder has finished. */
  run<T>(f: () => Promise<T>): Promise<T> {
    const next = this.#tail.then(f, f);
    this.#tail = next.catch(() => undefined);
    return next;
  }
}

/** Runs one checked request against `b`. */
export async function runOp(b: HelperBackends, req: HelperRequest, writes: Mutex): Promise<unknown> {
  try {
    return await _run(b, req, writes);
  } catch (e) {
    if (e instanceof HelperError) throw e;
    const msg = e instanceof Error ? e.message : String(e);
    if (e instanceof PageSizeUnsupported) throw new HelperError("unsupported", `${req.op}: ${msg}`, { cause: e });
    throw new HelperError("failed", `${req.op}: ${msg}`, { cause: e });
  }
}

async function _run(b: HelperBackends, req: HelperRequest, writes: Mutex): Promise<unknown> {
  switch (req.op) {
    case "host.boot_id":
      return { bootId: await b.bootId() };
    case "host.inventory":
      return await b.inventory.read();
    case "host.memory":
      return await b.memory.read();
    case "pci.numa_node":
      return { numaNode: (await b.numaNode(req.args.pciBusId)) ?? null };
    case "holds.list":
      return await b.holds.list();
    case "file.write": {
      const a = req.args;
      await writes.run(async () => {
        if (a.kind === "allocation-env") return await b.holds.writeEnv(a.allocationId, a.env);
        return await b.holds.writeSpec({
          allocationId: a.allocationId,
          binding: a.binding,
          devices: a.devices.map((d) => ({
            class: d.class,
            atom: d.atom,
            gpuUuid: d.gpuUuid,
            cdiName: d.cdiName,
            ...(d.minorNumber !== undefined ? { minorNumber: d.minorNumber } : {}),
          })),
          env: a.env,
          ...(a.cgroupParent !== undefined ? { cgroupParent: a.cgroupParent } : {}),
        });
      });
      return {};
    }
    case "file.remove": {
      const { kind, allocationId } = req.args;
      await writes.run(() => kind === "cdi" ? b.holds.removeSpec(allocationId) : b.holds.removeEnv(allocationId));
      return {};
    }
    case "slice.apply":
      await writes.run(() => b.slices.apply(req.args.name, req.args.settings));
      return {};
    case "slice.remove":
      return { removal: await writes.run(() => b.slices.remove(req.args.name)) };
    case "slice.list":
      return { names: await b.slices.list() };
    case "slice.usage":
      return { usage: (await b.slices.hugetlbUsage(req.args.name)) ?? null };
    case "gpu.reset":
      await b.gpuReset(req.args.gpuUuid);
      return {};
    case "node.reboot":
      await b.rebooter.reboot(req.args.reason);
      return {};
    case "nft.apply":
      return { counts: await writes.run(() => b.nft.apply(req.args.policy)) };
    case "nft.list":
      return { counts: await b.nft.list() };
    case "sysctl.read":
      return await b.sysctl.read(req.args.keys);
    case "sysctl.apply":
      return { live: await writes.run(() => b.sysctl.apply(req.args.steps)) };
    case "hugepages.read":
      return await b.hugepages.read();
    case "hugepages.apply":
      return { pools: await writes.run(() => b.hugepages.apply(req.args.steps)) };
  }
}
