/**
 * The `libvirt-kvm` runtime's root half over the helper: each verb of {@link LibvirtHostPort} is one `libvirt.*` op.
 * A refusal comes back as a result (`{ refused }`) and stays one; a failed or refused request is a `HelperError`
 * (`helper: …`), which the runtime lets through and the converger retries next pass.
 *
 * @module
 */
import type {
  BalloonFigures,
  DomainPlan,
  HostDomain,
  HostOutcome,
  HotDisk,
  HotDiskRef,
  LibvirtHostPort,
} from "../../core/converge/instances/domain_plan.ts";
import type { DomainState } from "../../core/converge/instances/runtime.ts";
import { HelperError } from "../../core/helper/mod.ts";
import type { HelperClient } from "../helper/client.ts";

const _STATES: readonly string[] = ["running", "paused", "stopped"];

function _outcome(op: string, r: unknown): HostOutcome {
  if (typeof r !== "object" || r === null) throw new HelperError("malformed", `${op}: the answer is not an object`);
  const refused = (r as { refused?: unknown }).refused;
  if (refused === undefined) return {};
  const f = refused as { reason?: unknown; message?: unknown };
  if (typeof f.reason !== "string" || typeof f.message !== "string") {
    throw new HelperError("malformed", `${op}: the answer's refusal has no reason and message`);
  }
  return { refused: { reason: f.reason, message: f.message } };
}

/** The port over a {@link HelperClient}. */
export class HelperLibvirtHost implements LibvirtHostPort {
  constructor(private readonly c: HelperClient) {}

  async list(): Promise<HostDomain[]> {
    const r = await this.c.call("libvirt.list", {});
    if (!Array.isArray(r.domains)) throw new HelperError("malformed", "libvirt.list: the answer has no domains");
    return r.domains.map((d) => {
      if (typeof d.name !== "string" || !_STATES.includes(d.state)) {
        throw new HelperError("malformed", "libvirt.list: a domain without a name or a known state");
      }
      return { name: d.name, state: d.state as DomainState, plan: d.plan ?? undefined };
    });
  }

  async define(plan: DomainPlan): Promise<HostOutcome> {
    return _outcome("libvirt.define", await this.c.call("libvirt.define", { plan }));
  }
  async start(id: string, paused: boolean): Promise<HostOutcome> {
    return _outcome("libvirt.start", await this.c.call("libvirt.start", { id, paused }));
  }
  async suspend(id: string): Promise<HostOutcome> {
    return _outcome("libvirt.suspend", await this.c.call("libvirt.suspend", { id }));
  }
  async resume(id: string): Promise<HostOutcome> {
    return _outcome("libvirt.resume", await this.c.call("libvirt.resume", { id }));
  }
  async shutdown(id: string): Promise<HostOutcome> {
    return _outcome("libvirt.shutdown", await this.c.call("libvirt.shutdown", { id }));
  }
  async destroy(id: string): Promise<HostOutcome> {
    return _outcome("libvirt.destroy", await this.c.call("libvirt.destroy", { id }));
  }
  async undefine(id: string): Promise<HostOutcome> {
    return _outcome("libvirt.undefine", await this.c.call("libvirt.undefine", { id }));
  }
  async blockresize(id: string, bytes: number, volume?: string): Promise<HostOutcome> {
    const args = volume === undefined ? { id, bytes } : { id, bytes, volume };
    return _outcome("libvirt.blockresize", await this.c.call("libvirt.blockresize", args));
  }
  async attachDisk(id: string, disk: HotDisk): Promise<HostOutcome> {
    return _outcome("libvirt.attach_disk", await this.c.call("libvirt.attach_disk", { id, disk }));
  }
  async detachDisk(id: string, disk: HotDiskRef): Promise<HostOutcome> {
    return _outcome("libvirt.detach_disk", await this.c.call("libvirt.detach_disk", { id, disk }));
  }
  async save(id: string): Promise<HostOutcome> {
    return _outcome("libvirt.save", await this.c.call("libvirt.save", { id }));
  }
  async restore(id: string, paused: boolean): Promise<HostOutcome> {
    return _outcome("libvirt.restore", await this.c.call("libvirt.restore", { id, paused }));
  }
  async setmem(id: string, kib: number): Promise<HostOutcome> {
    return _outcome("libvirt.setmem", await this.c.call("libvirt.setmem", { id, kib }));
  }
  async domstats(id: string): Promise<HostOutcome & { readonly balloon?: BalloonFigures }> {
    const r = await this.c.call("libvirt.domstats", { id });
    const o = _outcome("libvirt.domstats", r);
    if (o.refused) return o;
    const b = r.balloon;
    const num = (v: unknown) => v === null || (typeof v === "number" && Number.isSafeInteger(v) && v >= 0);
    if (!b || !num(b.currentKiB) || !num(b.maximumKiB) || !num(b.usedKiB)) {
      throw new HelperError("malformed", "libvirt.domstats: the answer has no balloon figures");
    }
    return { balloon: { currentKiB: b.currentKiB, maximumKiB: b.maximumKiB, usedKiB: b.usedKiB } };
  }
}
