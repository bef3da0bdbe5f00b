/**
 * A runtime plugin (000 §The runtimes: "a bcx plugin whose driver lists the kind `runtime` is also a runtime (`list`,
 * `apply`, `remove` over `Invoke`; no snapshots)"): an {@link InstanceRuntime} whose every call is one invoke of the
 * plugin's `runtime` operation, named by the plugin's own name (what `InstanceSpec.runtime` says). Input and output
 * are JSON:
 *
 * | bcd's input                                                   | the plugin's output                                |
 * | ------------------------------------------------------------- | -------------------------------------------------- |
 * | `{"call":"list"}`                                             | `{"domains":[{"id","state","record"?}]}`           |
 * | `{"call":"apply","instance":{…},"state":"stopped"}` (define)  | `{"taps":[…]}`                                     |
 * | `{"call":"apply","id":…,"state":"running"\|"paused"\|"stopped"}` | `{"taps":[…]}` (the taps it created for the instance) |
 * | `{"call":"remove","id":…}`                                    | `{}`                                               |
 *
 * The instance handed to `apply` is bcd's record (its ownership mark, which `list` must give back as it was) with each
 * NIC's tap name (`tapName(id, i)`, the name bcd's nftables rules match), its bridge and MAC, the placement, the image,
 * disk size and hostname, `sshFromHostOnly`, `identityRebindRef` and `guarded` (a network policy or ssh from the host
 * only). Not handed over: user data. A
 * plugin is not a rebinder and takes no snapshots: the runtime has no `grow`, and no snapshotter is made for it.
 *
 * **The fail-closed tap rule** (000 §Instances): after an `apply` that runs an instance, every NIC's tap must be among
 * the taps the plugin says it created; a guarded instance whose taps are missing is stopped and fails with `runtime did
 * not create taps …: its network rules cannot apply`. An instance is guarded when its spec has a network policy or
 * `ssh_from_host_only`; a record without the flag (made before it existed) counts as guarded, so the rule fails closed.
 *
 * @module
 */
import { tapName } from "../converge/instances/tap_name.ts";
import {
  type Domain,
  type DomainRecord,
  type DomainState,
  type InstanceRuntime,
  RuntimeRefused,
} from "../converge/instances/runtime.ts";
import type { PluginHost } from "./host.ts";
import { PluginError, RUNTIME_OPERATION } from "./protocol.ts";

const _STATES: readonly DomainState[] = ["running", "paused", "stopped"];
/** The reason of an instance whose plugin runtime did not create its taps. */
export const TAPS_MISSING = "taps-missing";

/** {@link InstanceRuntime} over the plugin `name`'s `runtime` operation. */
export class PluginRuntime implements InstanceRuntime {
  constructor(readonly host: PluginHost, readonly name: string) {}

  async #call(input: unknown): Promise<Record<string, unknown>> {
    let out: string;
    try {
      out = await this.host.invoke(this.name, RUNTIME_OPERATION, JSON.stringify(input), new AbortController().signal);
    } catch (e) {
      // A refusal of the plugin's own (an error frame) fails the instance; the rest (a crash, a timeout) is retried.
      if (e instanceof PluginError && e.reason === "plugin-failed") {
        throw new RuntimeRefused("runtime-refused", e.message, { cause: e });
      }
      throw e;
    }
    let v: unknown;
    try {
      v = JSON.parse(out);
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      throw new PluginError("plugin-protocol", `runtime plugin ${this.name} answered no JSON`, { cause: e });
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new PluginError("plugin-protocol", `runtime plugin ${this.name} answered no object`);
    }
    return v as Record<string, unknown>;
  }

  async list(): Promise<Domain[]> {
    const r = await this.#call({ call: "list" });
    if (!Array.isArray(r.domains)) throw new PluginError("plugin-protocol", `runtime plugin ${this.name}: no domains`);
    return r.domains.map((d: unknown, i: number) => {
      const o = (typeof d === "object" && d !== null ? d : {}) as Record<string, unknown>;
      if (typeof o.id !== "string" || !_STATES.includes(o.state as DomainState)) {
        throw new PluginError("plugin-protocol", `runtime plugin ${this.name}: domains[${i}] has no id or state`);
      }
      const rec = o.record as DomainRecord | undefined;
      const managed = rec !== undefined && rec !== null && typeof rec === "object" && rec.id === o.id;
      return { id: o.id, state: o.state as DomainState, record: managed ? rec : undefined };
    });
  }

  async define(record: DomainRecord): Promise<void> {
    const nics = (record.launch?.nics ?? []).map((n, i) => ({ ...n, tap: tapName(record.id, i) }));
    const { launch, ...mark } = record;
    const instance = {
      ...mark,
      nics,
      placement: launch?.placement ?? null,
      image: launch?.image ?? null,
      diskBytes: launch?.diskBytes ?? 0,
      hostname: launch?.hostname ?? "",
      sshFromHostOnly: launch?.sshFromHostOnly ?? false,
      identityRebindRef: launch?.identityRebindRef ?? "",
      // a record made without the flag counts as guarded: the rule fails closed
      guarded: launch?.guarded ?? true,
    };
    await this.#call({ call: "apply", instance, state: "stopped" });
  }

  async start(id: string, paused: boolean): Promise<void> {
    await this.#run(id, paused ? "paused" : "running");
  }

  async resume(id: string): Promise<void> {
    await this.#run(id, "running");
  }

  async pause(id: string): Promise<void> {
    await this.#call({ call: "apply", id, state: "paused" });
  }

  async stop(id: string): Promise<void> {
    await this.#call({ call: "apply", id, state: "stopped" });
  }

  async delete(id: string): Promise<void> {
    await this.#call({ call: "remove", id });
  }

  /** An `apply` that runs `id`, then the tap rule. */
  async #run(id: string, state: DomainState): Promise<void> {
    const r = await this.#call({ call: "apply", id, state });
    const made = new Set(Array.isArray(r.taps) ? r.taps.filter((t): t is string => typeof t === "string") : []);
    const rec = (await this.list()).find((d) => d.id === id)?.record as
      | (DomainRecord & { nics?: unknown[]; guarded?: boolean })
      | undefined;
    if (rec?.guarded === false) return; // no rule of bcd's matches its taps: nothing to fail closed
    const want = (rec?.launch?.nics ?? rec?.nics ?? []).map((_, i) => tapName(id, i));
    const missing = want.filter((t) => !made.has(t));
    if (missing.length === 0) return;
    await this.#call({ call: "apply", id, state: "stopped" });
    throw new RuntimeRefused(
      TAPS_MISSING,
      `runtime did not create taps ${missing.join(", ")}: its network rules cannot apply`,
    );
  }
}
