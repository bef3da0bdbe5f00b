/**
 * The helper's operations over its backends: a checked request in, a result out. Requests that change the hold
 * state (`file.*`, `slice.apply`, `slice.remove`) run one at a time; reads, `gpu.reset` and `node.reboot` do not
 * wait for them. A runtime's failure becomes {@link HelperError} `failed` with the runtime's message.
 *
 * Volume limits (issue 27, item 8), checked here against the host before anything is written:
 *
 * | what | bound | refusal |
 * | ---- | ----- | ------- |
 * | hold files of one kind (CDI specs, env files) | {@link MAX_HOLD_FILES}; rewriting one that exists is always allowed | `over-limit` |
 * | one env file / one hold's env lines | `MAX_ENV_BYTES` of lines (`core/helper/args.ts`) | `invalid-argument` |
 * | slice settings | the host's CPUs, NUMA nodes, `MemTotal` and huge page pools (`sliceHostProblem`) | `invalid-argument` |
 *
 * @module
 */
import { type SliceHostLimits, sliceHostProblem } from "../../core/converge/devices/slice.ts";
import { HelperError, type HelperRequest } from "../../core/helper/mod.ts";
import { PageSizeUnsupported } from "../../core/converge/devices/ports.ts";
import { runAccessOp } from "./access_ops.ts";
import { type Answer, answer as _answer } from "./answer.ts";
import { PluginError } from "../../core/plugins/mod.ts";
import { migHoldUsers, migStepsProblem } from "../../core/host/mod.ts";
import type { Mutex } from "./mutex.ts";
import type { HelperBackends } from "./backends.ts";

/** The most hold files of one kind the helper keeps (a host's GPUs, MIG instances and slots are far fewer). */
export const MAX_HOLD_FILES = 512;

/** The host's limits for slice settings: CPUs and NUMA nodes from the inventory, memory and pools from /proc, /sys. */
export async function sliceHostLimits(b: HelperBackends): Promise<SliceHostLimits> {
  const inv = await b.inventory.read();
  let mem: Awaited<ReturnType<HelperBackends["memory"]["read"]>> | undefined;
  try {
    mem = await b.memory.read();
  } catch (e) {
    // Memory that cannot be read is not checked, as host admission binds without it (000 §Device assignments).
    if (!(e instanceof Deno.errors.NotFound || e instanceof RangeError)) throw e;
  }
  const numa = inv.numa_nodes ?? [];
  const pool = (k: "hugepages_2mi_total" | "hugepages_1gi_total", size: number) =>
    numa.length > 0 ? numa.reduce((n, x) => n + Number(x[k] ?? 0), 0) * size : mem?.hugetlbBytes;
  return {
    cpus: Number(inv.cpu?.threads ?? 0),
    numaNodes: numa.length > 0 ? numa.map((n) => Number(n.id ?? 0)) : [0],
    ...(mem !== undefined ? { memTotalBytes: mem.memTotalBytes } : {}),
    hugetlb2MBBytes: pool("hugepages_2mi_total", 2 * 1024 * 1024),
    hugetlb1GBBytes: pool("hugepages_1gi_total", 1024 * 1024 * 1024),
  };
}

async function _roomFor(b: HelperBackends, kind: "cdi" | "allocation-env", allocationId: string): Promise<void> {
  const ids = await b.holds.fileIds(kind);
  if (!ids.has(allocationId) && ids.size >= MAX_HOLD_FILES) {
    throw new HelperError(
      "over-limit",
      `file.write: ${ids.size} ${kind} files exist, the most the helper keeps is ${MAX_HOLD_FILES}`,
    );
  }
}

function _daemon(b: HelperBackends, op: string): NonNullable<HelperBackends["daemon"]> {
  if (!b.daemon) throw new HelperError("failed", `${op}: this helper manages no releases ([daemon] releases_dir)`);
  return b.daemon;
}

/** Runs one checked request against `b`; the result is `HelperResults[req.op]`. */
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

async function _run(b: HelperBackends, req: HelperRequest, writes: Mutex): Promise<Answer> {
  switch (req.op) {
    case "host.boot_id":
      return _answer(req, { bootId: await b.bootId() });
    case "host.inventory":
      return _answer(req, await b.inventory.read());
    case "host.memory":
      return _answer(req, await b.memory.read());
    case "host.memory_pressure":
      if (!b.pressure) throw new HelperError("failed", "host.memory_pressure: this helper has no pressure backend");
      return _answer(req, await b.pressure.read());
    case "daemon.status":
      return _answer(req, await _daemon(b, req.op).status());
    case "daemon.install": {
      let signature: Uint8Array;
      try {
        signature = Uint8Array.from(atob(req.args.signature), (c) => c.charCodeAt(0));
      } catch (e) {
        if (!(e instanceof DOMException)) throw e;
        throw new HelperError("invalid-argument", "daemon.install: signature is not base64");
      }
      const { version, sha256 } = req.args;
      return _answer(req, await writes.run(() => _daemon(b, req.op).install({ version, sha256, signature })));
    }
    case "daemon.confirm":
      return _answer(req, await writes.run(() => _daemon(b, req.op).confirm(req.args.version)));
    case "host.doctor":
      if (!b.doctor) throw new HelperError("failed", "host.doctor: this helper has no doctor backend");
      return _answer(req, await b.doctor.facts());
    case "pci.numa_node":
      return _answer(req, { numaNode: (await b.numaNode(req.args.pciBusId)) ?? null });
    case "holds.list":
      return _answer(req, await b.holds.list());
    case "file.write": {
      const a = req.args;
      await writes.run(async () => {
        await _roomFor(b, a.kind, a.allocationId);
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
      return _answer(req, {});
    }
    case "file.remove": {
      const { kind, allocationId } = req.args;
      await writes.run(() => kind === "cdi" ? b.holds.removeSpec(allocationId) : b.holds.removeEnv(allocationId));
      return _answer(req, {});
    }
    case "slice.apply": {
      const why = sliceHostProblem(req.args.settings, await sliceHostLimits(b));
      if (why !== undefined) throw new HelperError("invalid-argument", `slice.apply: ${why}`);
      await writes.run(() => b.slices.apply(req.args.name, req.args.settings));
      return _answer(req, {});
    }
    case "slice.remove":
      return _answer(req, { removal: await writes.run(() => b.slices.remove(req.args.name)) });
    case "slice.list":
      return _answer(req, { names: await b.slices.list() });
    case "slice.usage":
      return _answer(req, { usage: (await b.slices.hugetlbUsage(req.args.name)) ?? null });
    case "gpu.reset":
      await b.gpuReset(req.args.gpuUuid);
      return _answer(req, {});
    case "dcgm.diag":
      return _answer(req, { run: await b.dcgmDiag(req.args.level, req.args.gpuUuids) });
    case "node.reboot":
      await b.rebooter.reboot(req.args.reason);
      return _answer(req, {});
    case "nft.apply":
      return _answer(req, { counts: await writes.run(() => b.nft.apply(req.args.policy)) });
    case "nft.list":
      return _answer(req, { counts: await b.nft.list() });
    case "sysctl.read":
      return _answer(req, await b.sysctl.read(req.args.keys));
    case "sysctl.apply":
      return _answer(req, { live: await writes.run(() => b.sysctl.apply(req.args.steps)) });
    case "hugepages.read":
      return _answer(req, await b.hugepages.read());
    case "hugepages.apply":
      return _answer(req, { pools: await writes.run(() => b.hugepages.apply(req.args.steps)) });
    case "modules.read":
      return _answer(req, await b.modules.read());
    case "modules.apply":
      return _answer(req, await writes.run(() => b.modules.apply(req.args.steps)));
    case "mig.read":
      return _answer(req, await b.mig.read());
    case "mig.apply":
      return _answer(
        req,
        await writes.run(async () => {
          // Root checks the holds itself: no step touches an instance, or a GPU, that a hold file names.
          const why = migStepsProblem(req.args.steps, await b.mig.read(), migHoldUsers((await b.holds.list()).holds));
          if (why !== undefined) throw new HelperError("invalid-argument", `mig.apply: ${why}`);
          return await b.mig.apply(req.args.steps);
        }),
      );
    case "sharing.read":
      return _answer(req, await b.sharing.read());
    case "sharing.apply":
      return _answer(
        req,
        await writes.run(async () => {
          // Root checks the holds itself: MPS is not stopped from under a bound slot hold.
          if (req.args.steps.some((s) => s.op === "mps-stop")) {
            const slots = (await b.holds.list()).holds.filter((h) => h.devices.some((d) => d.class === "gpu.slot"));
            if (slots.length) {
              const ids = slots.map((h) => h.allocationId).join(", ");
              throw new HelperError("invalid-argument", `sharing.apply: slot hold ${ids} uses MPS`);
            }
          }
          return await b.sharing.apply(req.args.steps);
        }),
      );
    case "package.read":
      return _answer(req, await b.packages.read(req.args.unit, req.args.package));
    case "package.apply":
      return _answer(req, await writes.run(() => b.packages.apply(req.args.unit, req.args.package, req.args.steps)));
    case "kube.read":
      return _answer(req, await b.kubernetes.read());
    case "kube.join": {
      const { token, ...join } = req.args;
      return _answer(req, await writes.run(() => b.kubernetes.join(join, token)));
    }
    case "kube.reset":
      return _answer(req, await writes.run(() => b.kubernetes.reset()));
    case "plugin.list":
      return _answer(req, { plugins: await b.plugins.list() });
    case "plugin.manifest":
      try {
        return _answer(req, { manifest: await b.plugins.manifest(req.args.name) });
      } catch (e) {
        if (e instanceof PluginError) return _answer(req, { refused: { reason: e.reason, message: e.message } });
        throw e;
      }
    case "plugin.attach":
      throw new HelperError("invalid-argument", "plugin.attach: only as the first request of its own connection");
    case "access.observe":
    case "access.apply":
      return await runAccessOp(b, req, writes);
    case "disk.wipe":
    case "disk.wipe_status":
    case "disk.wipe_cancel":
      return await _disk(b, req);
    case "disk.deploy":
      if (!b.deploys) throw new HelperError("failed", "disk.deploy: this helper deploys no images");
      return _answer(req, await b.deploys.deploy(req.args));
    case "kexec.load":
      if (!b.kexec) throw new HelperError("failed", "kexec.load: this helper loads no kernels");
      return _answer(req, await b.kexec.load(req.args));
    case "kexec.exec":
      if (!b.kexec) throw new HelperError("failed", "kexec.exec: this helper loads no kernels");
      return _answer(req, await b.kexec.exec());
    case "ch.taps":
    case "ch.untaps":
    case "ch.launch":
    case "ch.add_net":
    case "ch.restore":
    case "ch.stop":
    case "ch.state":
    case "ch.vfio":
    case "ch.unvfio":
    case "ch.memory":
      return await _ch(b, req);
    default:
      return await _libvirt(b, req);
  }
}

/** The `ch.*` ops: refused `failed` on a host without root's `cloud-hypervisor` binary. */
async function _ch(b: HelperBackends, req: HelperRequest): Promise<Answer> {
  const c = b.ch;
  if (!c) throw new HelperError("failed", `${req.op}: cloud-hypervisor is not installed on this host`);
  switch (req.op) {
    case "ch.taps":
      return _answer(req, await c.taps(req.args.id));
    case "ch.untaps":
      return _answer(req, await c.untaps(req.args.id));
    case "ch.launch":
      return _answer(req, await c.launch(req.args.id));
    case "ch.add_net":
      return _answer(req, await c.addNet(req.args.id, req.args.index));
    case "ch.restore":
      return _answer(req, await c.restore(req.args.id, req.args.resume));
    case "ch.stop":
      return _answer(req, await c.stop(req.args.id));
    case "ch.state":
      return _answer(req, { state: await c.state(req.args.id) });
    case "ch.vfio":
      return _answer(req, await c.vfio(req.args.id));
    case "ch.unvfio":
      return _answer(req, await c.unvfio(req.args.id));
    case "ch.memory":
      return _answer(req, { usedBytes: await c.memory(req.args.id) });
    default:
      throw new HelperError("unknown-op", `${req.op} has no runner`);
  }
}

/** The `disk.*` ops: refused `failed` by a helper that has no disk backend. */
async function _disk(b: HelperBackends, req: HelperRequest): Promise<Answer> {
  const d = b.disks;
  if (!d) throw new HelperError("failed", `${req.op}: this helper wipes no disks`);
  switch (req.op) {
    case "disk.wipe":
      return _answer(req, await d.wipe(req.args));
    case "disk.wipe_status":
      return _answer(req, { progress: d.status(req.args.diskId) });
    case "disk.wipe_cancel":
      return _answer(req, { cancelled: d.cancel(req.args.diskId) });
    default:
      throw new HelperError("unknown-op", `${req.op} has no runner`);
  }
}

/** The `libvirt.*` ops: refused `failed` on a host without virsh. */
async function _libvirt(b: HelperBackends, req: HelperRequest): Promise<Answer> {
  const l = b.libvirt;
  if (!l) throw new HelperError("failed", `${req.op}: libvirt is not installed on this host`);
  switch (req.op) {
    case "libvirt.list":
      return _answer(req, {
        domains: (await l.list()).map((d) => ({ name: d.name, state: d.state, plan: d.plan ?? null })),
      });
    case "libvirt.define":
      return _answer(req, await l.define(req.args.plan));
    case "libvirt.start":
      return _answer(req, await l.start(req.args.id, req.args.paused));
    case "libvirt.suspend":
      return _answer(req, await l.suspend(req.args.id));
    case "libvirt.resume":
      return _answer(req, await l.resume(req.args.id));
    case "libvirt.shutdown":
      return _answer(req, await l.shutdown(req.args.id));
    case "libvirt.destroy":
      return _answer(req, await l.destroy(req.args.id));
    case "libvirt.undefine":
      return _answer(req, await l.undefine(req.args.id));
    case "libvirt.blockresize":
      return _answer(req, await l.blockresize(req.args.id, req.args.bytes, req.args.volume));
    case "libvirt.attach_disk":
      return _answer(req, await l.attachDisk(req.args.id, req.args.disk));
    case "libvirt.detach_disk":
      return _answer(req, await l.detachDisk(req.args.id, req.args.disk));
    case "libvirt.save":
      return _answer(req, await l.save(req.args.id));
    case "libvirt.restore":
      return _answer(req, await l.restore(req.args.id, req.args.paused));
    case "libvirt.setmem":
      return _answer(req, await l.setmem(req.args.id, req.args.kib));
    case "libvirt.domstats":
      return _answer(req, await l.domstats(req.args.id));
    default:
      throw new HelperError("unknown-op", `${req.op} has no runner`);
  }
}
