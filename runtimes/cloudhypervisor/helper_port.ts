/**
 * The `cloud-hypervisor` runtime's root half over the helper: each verb of {@link ChHostPort} is one `ch.*` op. A
 * refusal comes back as a result (`{ refused }`) and stays one; a failed or refused request is a `HelperError`
 * (`helper: …`), which the runtime lets through and the converger retries next pass.
 *
 * @module
 */
import {
  type ChHostPort,
  type HostOutcome,
  UNIT_STATES,
  type UnitState,
} from "../../core/converge/instances/ch_port.ts";
import { HelperError } from "../../core/helper/mod.ts";
import type { HelperClient } from "../helper/client.ts";

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

function _state(op: string, s: unknown): UnitState {
  if (!(UNIT_STATES as readonly unknown[]).includes(s)) throw new HelperError("malformed", `${op}: unit state ${s}`);
  return s as UnitState;
}

/** The port over a {@link HelperClient}. */
export class HelperChHost implements ChHostPort {
  constructor(private readonly c: HelperClient) {}

  async taps(id: string): Promise<HostOutcome> {
    return _outcome("ch.taps", await this.c.call("ch.taps", { id }));
  }
  async untaps(id: string): Promise<HostOutcome> {
    return _outcome("ch.untaps", await this.c.call("ch.untaps", { id }));
  }
  async launch(id: string): Promise<HostOutcome> {
    return _outcome("ch.launch", await this.c.call("ch.launch", { id }));
  }
  async addNet(id: string, index: number): Promise<HostOutcome> {
    return _outcome("ch.add_net", await this.c.call("ch.add_net", { id, index }));
  }
  async restore(id: string, resume: boolean): Promise<HostOutcome> {
    return _outcome("ch.restore", await this.c.call("ch.restore", { id, resume }));
  }
  async stop(id: string): Promise<HostOutcome & { readonly state?: UnitState }> {
    const r = await this.c.call("ch.stop", { id });
    const o = _outcome("ch.stop", r);
    return r.state === undefined ? o : { ...o, state: _state("ch.stop", r.state) };
  }
  async vfio(id: string): Promise<HostOutcome> {
    return _outcome("ch.vfio", await this.c.call("ch.vfio", { id }));
  }
  async unvfio(id: string): Promise<HostOutcome> {
    return _outcome("ch.unvfio", await this.c.call("ch.unvfio", { id }));
  }
  async memory(id: string): Promise<number | null> {
    const r = await this.c.call("ch.memory", { id });
    const n = (r as { usedBytes?: unknown }).usedBytes;
    if (n === null) return null;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 0) {
      throw new HelperError("malformed", `ch.memory: used bytes ${JSON.stringify(n)} is not a byte count`);
    }
    return n;
  }
  async state(id: string): Promise<UnitState> {
    return _state("ch.state", (await this.c.call("ch.state", { id })).state);
  }
}
