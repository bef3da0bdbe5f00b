/**
 * The `libvirt-kvm` instance runtime (seed 000 §The runtimes), the node's half: it prepares an instance's files in
 * its own `<data dir>/libvirt` (the base image through {@link ImageStore}, the `qemu-img create -u` overlay, the
 * NoCloud seed ISO) and asks a {@link LibvirtHostPort} (the root helper's `libvirt.*` ops, or {@link LibvirtHost} in
 * process) for everything libvirt does. It never builds XML and never sends a path.
 *
 * States: `start` (or `start --paused`), `suspend` and `resume`; a stop is `shutdown`, then `destroy` once
 * {@link LibvirtRuntimeOptions.shutdownGraceMs} (60 s) passed without the guest powering off; a delete destroys,
 * undefines and removes the instance's directory. A root disk grows (`qemu-img resize` stopped, `blockresize`
 * running); a smaller size fails the instance. A refusal of the host side (a bad image, a foreign domain, a start
 * libvirt refused for lack of memory) is a {@link RuntimeRefused} carrying its reason; anything else is thrown as
 * is and retried next pass.
 *
 * @module
 */
import type { DomainPlan, HostOutcome, LibvirtHostPort } from "../../core/converge/instances/domain_plan.ts";
import {
  type Domain,
  type DomainRecord,
  type InstanceRuntime,
  RuntimeRefused,
} from "../../core/converge/instances/runtime.ts";
import { INSTANCE_ID } from "../../core/converge/instances/domain_plan.ts";
import { parseQcow2Header, readQcow2Prefix } from "../../core/images/qcow2_header.ts";
import type { Logger } from "../../core/log/mod.ts";
import { baseVirtualSize, buildSeedIso, createOverlay, overlayBase, resizeDisk } from "./disk_tools.ts";
import { ImageFetchRefused, ImageStore } from "./image_store.ts";

/** The runtime's name in `InstanceSpec.runtime`. */
export const LIBVIRT_RUNTIME = "libvirt-kvm";

/** Options of {@link LibvirtRuntime}. */
export interface LibvirtRuntimeOptions {
  readonly host: LibvirtHostPort;
  /** The agent's data dir; files live under `<dataDir>/libvirt`. */
  readonly dataDir: string;
  readonly fetch?: typeof fetch;
  /** How long a stop waits for the guest to power off before `destroy` (default 60 s). */
  readonly shutdownGraceMs?: number;
  /** Clock and sleep (tests inject both). */
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly log?: Logger;
}

const MiB = 1024 * 1024;

function _check(o: HostOutcome, id: string): void {
  if (o.refused) throw new RuntimeRefused(o.refused.reason, `${id}: ${o.refused.message}`);
}

/** The runtime. */
export class LibvirtRuntime implements InstanceRuntime {
  readonly name = LIBVIRT_RUNTIME;
  readonly images: ImageStore;
  readonly #o: LibvirtRuntimeOptions;
  readonly #dir: string;

  constructor(opts: LibvirtRuntimeOptions) {
    this.#o = opts;
    this.#dir = `${opts.dataDir}/libvirt`;
    this.images = new ImageStore({ dir: `${this.#dir}/images`, fetch: opts.fetch });
  }

  /** The instance's directory. */
  instanceDir(id: string): string {
    return `${this.#dir}/instances/${id}`;
  }

  async list(): Promise<Domain[]> {
    return (await this.#o.host.list()).map((d) => ({
      id: d.name,
      state: d.state,
      record: d.plan === undefined ? undefined : {
        id: d.plan.id,
        allocationId: d.plan.allocationId,
        vcpus: d.plan.vcpus,
        memoryBytes: d.plan.memoryMiB * MiB,
        imageSha256: d.plan.image?.sha256 ?? "",
        gpus: d.plan.gpus.map((g) => g.uuid),
        ...(d.plan.placement && d.plan.placement.hugepages !== "none" ? { hugepages: d.plan.placement.hugepages } : {}),
      },
    }));
  }

  async define(record: DomainRecord): Promise<void> {
    const id = record.id;
    if (!INSTANCE_ID.test(id)) {
      throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    }
    const l = record.launch;
    if (!l) {
      throw new RuntimeRefused("invalid-spec", `${id}: the libvirt-kvm runtime needs the instance's image and disks`);
    }
    if (record.memoryBytes % MiB !== 0 || record.memoryBytes < MiB) {
      throw new RuntimeRefused("invalid-size", `${id}: memory ${record.memoryBytes} is not a whole number of MiB`);
    }
    if (!l.image) throw new RuntimeRefused("invalid-spec", `${id}: no image to boot from`);
    if (l.gpus.some((g) => g.pciBusId === "")) {
      throw new RuntimeRefused("gpu-without-bus-id", `${id}: a GPU has no PCI bus id in the inventory`);
    }
    let base: string;
    try {
      base = await this.images.ensure(l.image.url, l.image.sha256, l.image.format);
    } catch (e) {
      if (e instanceof ImageFetchRefused) throw new RuntimeRefused(e.reason, `${id}: ${e.message}`, { cause: e });
      throw e;
    }
    const dir = this.instanceDir(id);
    await Deno.mkdir(`${this.#dir}/instances`, { recursive: true, mode: 0o700 });
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const disk = `${dir}/disk.qcow2`;
    const ob = overlayBase(l.image.format);
    const baseSize = ob ? await baseVirtualSize(base, ob) : 0;
    if (!(await _exists(disk))) {
      const size = Math.max(l.diskBytes, baseSize);
      if (size <= 0) throw new RuntimeRefused("invalid-size", `${id}: an iso install needs a disk size`);
      await createOverlay(`${disk}.tmp`, ob ? { path: base, format: ob } : null, size);
      await Deno.rename(`${disk}.tmp`, disk);
    } else if (l.diskBytes > 0) {
      await this.#grow(id, disk, l.diskBytes);
    }
    if (l.userData !== null) await buildSeedIso(`${dir}/seed.iso`, id, l.hostname, l.userData);
    const plan: DomainPlan = {
      id,
      allocationId: record.allocationId,
      vcpus: record.vcpus,
      memoryMiB: record.memoryBytes / MiB,
      image: { sha256: l.image.sha256, format: l.image.format },
      nics: l.nics,
      gpus: l.gpus,
      placement: l.placement,
      seed: l.userData !== null,
      restoredFrom: null,
    };
    _check(await this.#o.host.define(plan), id);
    this.#o.log?.info({ instance: id }, "libvirt-kvm: defined");
  }

  /** Grows the disk to `bytes` (`qemu-img resize` stopped, `blockresize` running); a smaller size is refused. */
  async #grow(id: string, disk: string, bytes: number): Promise<void> {
    const have = Number(parseQcow2Header(await readQcow2Prefix(disk)).virtualSize);
    if (bytes === have) return;
    if (bytes < have) {
      throw new RuntimeRefused("disk-shrink", `${id}: the disk is ${have} bytes; ${bytes} would shrink it`);
    }
    const state = (await this.#o.host.list()).find((d) => d.name === id)?.state;
    if (state === "running" || state === "paused") _check(await this.#o.host.blockresize(id, bytes), id);
    else await resizeDisk(disk, bytes);
  }

  async start(id: string, paused: boolean): Promise<void> {
    _check(await this.#o.host.start(id, paused), id);
  }
  async pause(id: string): Promise<void> {
    _check(await this.#o.host.suspend(id), id);
  }
  async resume(id: string): Promise<void> {
    _check(await this.#o.host.resume(id), id);
  }

  async #state(id: string) {
    return (await this.#o.host.list()).find((d) => d.name === id)?.state;
  }

  async stop(id: string): Promise<void> {
    const state = await this.#state(id);
    if (state === undefined || state === "stopped") return;
    if (state === "running") {
      _check(await this.#o.host.shutdown(id), id);
      const now = this.#o.now ?? Date.now;
      const sleep = this.#o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
      const until = now() + (this.#o.shutdownGraceMs ?? 60_000);
      while (now() < until) {
        if ((await this.#state(id)) !== "running") break;
        await sleep(1000);
      }
    }
    const left = await this.#state(id);
    if (left === "running" || left === "paused") {
      _check(await this.#o.host.destroy(id), id);
      this.#o.log?.info({ instance: id }, "libvirt-kvm: destroyed after the shutdown grace");
    }
  }

  async delete(id: string): Promise<void> {
    const d = (await this.#o.host.list()).find((x) => x.name === id);
    if (d && !d.plan) throw new RuntimeRefused("unmanaged-domain", `domain ${id} is not this node's; never removed`);
    if (d) {
      if (d.state !== "stopped") _check(await this.#o.host.destroy(id), id);
      _check(await this.#o.host.undefine(id), id);
    }
    if (INSTANCE_ID.test(id)) {
      await Deno.remove(this.instanceDir(id), { recursive: true }).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
    }
  }
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
