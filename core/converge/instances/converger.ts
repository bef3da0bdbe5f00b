/**
 * The `instances` converger: each desired instance is defined on its runtime and brought to its state (`RUNNING`,
 * `PAUSED`, `STOPPED`, `DELETED`); a managed domain no longer desired is deleted; an unmanaged one is reported and
 * never touched. An instance the runtime refuses (unknown runtime, bad request) fails that instance terminally at the
 * generation; a transient error keeps the section `PROGRESSING`. With network rules ({@link InstanceNetwork}), every
 * plan starts with loading them, before any domain starts: an instance they refuse fails with reason
 * `network-policy` and is stopped if it runs, and rules that did not load keep the section `PROGRESSING`.
 *
 * `StatusReport.instances_complete` ({@link InstancesConverger.listing}): true only once every runtime was listed
 * and while no runtime's last listing failed. A runtime that cannot be listed does not hide what the others hold (they
 * are still reported), but the pass cannot plan without it, so the section stays `PROGRESSING` until it lists again.
 *
 * @module
 */
import type { bcd } from "../../../proto/mod.ts";
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../engine.ts";
import { type InstanceNetwork, NETWORK_POLICY_REASON } from "./network.ts";
import { type Domain, type DomainRecord, type DomainState, type InstanceRuntime, RuntimeRefused } from "./runtime.ts";

type InstancesSection = bcd.v1.InstancesSection.$Properties;
type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

/** An observed domain with the runtime it lives on. */
export interface ObservedDomain extends Domain {
  readonly runtime: string;
}

/** One step of the plan. */
export type InstanceAction =
  | { readonly op: "define"; readonly runtime: string; readonly record: DomainRecord; readonly then: DomainState }
  | { readonly op: "start" | "pause" | "resume" | "stop" | "delete"; readonly runtime: string; readonly id: string }
  | { readonly op: "fail"; readonly id: string; readonly reason: string; readonly message: string }
  /** Load the network rules (first of every plan when the converger has them, so they load before any start). */
  | { readonly op: "network" };

/**
 * `StatusReport.instances` and `instances_complete`: what the runtimes hold, and whether that is everything (false
 * until every runtime has been listed, and whenever a runtime's last listing failed).
 */
export interface InstanceListing {
  readonly instances: readonly InstanceReport[];
  readonly complete: boolean;
}

/** A runtime's listing failed: the pass retries, and the report is not complete. */
export class RuntimeListingFailed extends Error {
  override name = "RuntimeListingFailed";
  constructor(readonly runtime: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** What the status report lists per instance. */
export interface InstanceReport {
  readonly id: string;
  readonly runtime: string;
  readonly state: "RUNNING" | "PAUSED" | "STOPPED" | "ERROR" | "PENDING";
  readonly managed: boolean;
  readonly message: string;
  readonly vcpus: number;
  readonly memoryBytes: number;
}

const WANT: Record<number, DomainState | "deleted" | undefined> = {
  1: "running",
  2: "paused",
  3: "stopped",
  4: "deleted",
};

function _record(i: InstanceSpec): DomainRecord {
  return {
    id: i.id ?? "",
    allocationId: i.allocation_id ?? "",
    vcpus: Number(i.vcpus ?? 0),
    memoryBytes: Number(i.memory_bytes ?? 0),
    imageSha256: i.image?.sha256 ?? "",
    gpus: (i.gpus ?? []).map((g) => g.uuid ?? ""),
  };
}

/** Moves a domain from `have` to `want`. */
function _transition(runtime: string, id: string, have: DomainState, want: DomainState): InstanceAction[] {
  if (have === want) return [];
  if (want === "stopped") return [{ op: "stop", runtime, id }];
  if (want === "paused") return have === "running" ? [{ op: "pause", runtime, id }] : [{ op: "start", runtime, id }];
  return have === "paused" ? [{ op: "resume", runtime, id }] : [{ op: "start", runtime, id }];
}

/** The converger over a set of runtimes. */
export class InstancesConverger implements SectionConverger<InstancesSection, ObservedDomain[], InstanceAction> {
  readonly section = "instances" as const;
  readonly #runtimes: ReadonlyMap<string, InstanceRuntime>;
  #failed = new Map<string, { reason: string; message: string }>();
  #observed: ObservedDomain[] = [];
  #desired: InstanceSpec[] = [];
  /** Runtimes whose last listing failed, with why; every runtime until it was first listed. */
  #unlisted = new Map<string, string>();

  readonly #network: InstanceNetwork | undefined;

  /** `network`: the instances' nftables rules, loaded at the start of every apply, before any domain starts. */
  constructor(runtimes: readonly InstanceRuntime[], opts: { readonly network?: InstanceNetwork } = {}) {
    this.#runtimes = new Map(runtimes.map((r) => [r.name, r]));
    this.#network = opts.network;
    for (const r of runtimes) this.#unlisted.set(r.name, "not listed yet");
  }

  /**
   * Lists every runtime. A runtime whose listing fails does not stop the others from being listed (the report keeps
   * what they hold, marked incomplete), but the pass cannot plan without knowing that runtime's domains: it throws
   * {@link RuntimeListingFailed}, which keeps the section `PROGRESSING` until a later pass lists it.
   */
  async observe(): Promise<ObservedDomain[]> {
    const all: ObservedDomain[] = [];
    for (const r of this.#runtimes.values()) {
      let domains: Domain[];
      try {
        domains = await r.list();
      } catch (e) {
        this.#unlisted.set(r.name, e instanceof Error ? e.message : String(e));
        continue;
      }
      this.#unlisted.delete(r.name);
      for (const d of domains) all.push({ ...d, runtime: r.name });
    }
    this.#observed = all;
    const failed = [...this.#unlisted];
    if (failed.length > 0) {
      const why = failed.map(([name, problem]) => `runtime ${name} could not be listed: ${problem}`).join("; ");
      throw new RuntimeListingFailed(failed[0]![0], why);
    }
    return all;
  }

  /** The report with whether it is complete (no runtime left unlisted). */
  listing(): InstanceListing {
    return { instances: this.report(), complete: this.#unlisted.size === 0 };
  }

  plan(desired: InstancesSection | undefined, observed: ObservedDomain[]): InstanceAction[] {
    const want = desired?.instances ?? [];
    this.#desired = want;
    const byId = new Map(observed.map((d) => [d.id, d]));
    const out: InstanceAction[] = [];
    const wanted = new Set<string>();
    for (const i of want) {
      const id = i.id ?? "";
      if (wanted.has(id)) {
        // Refused like an allocation listed twice (devices/plan.ts): the first entry stands, never a silent pick.
        out.push({ op: "fail", id, reason: "invalid-instance", message: `instance "${id}" is listed twice` });
        continue;
      }
      wanted.add(id);
      const target = WANT[i.state ?? 0] ?? "running";
      const runtime = i.runtime ?? "";
      const have = byId.get(id);
      if (!this.#runtimes.has(runtime)) {
        out.push({ op: "fail", id, reason: "unknown-runtime", message: `runtime "${runtime}" is not on this host` });
        continue;
      }
      if (have && !have.record) {
        out.push({
          op: "fail",
          id,
          reason: "unmanaged-domain",
          message: `a domain "${id}" exists that bcd did not define`,
        });
        continue;
      }
      if (target === "deleted") {
        if (have) out.push({ op: "delete", runtime: have.runtime, id });
        continue;
      }
      if (!have) out.push({ op: "define", runtime, record: _record(i), then: target });
      else out.push(..._transition(have.runtime, id, have.state, target));
    }
    for (const d of observed) {
      if (d.record && !wanted.has(d.id)) out.push({ op: "delete", runtime: d.runtime, id: d.id });
    }
    return this.#network === undefined ? out : [{ op: "network" }, ...out];
  }

  /**
   * The network rules' step (000 §Instances): loads the rules before any action, then turns each instance they refuse
   * into a `fail` action, dropping its start-like actions and stopping its domain when it runs.
   */
  async #withNetwork(
    actions: readonly InstanceAction[],
    desired: InstancesSection | undefined,
  ): Promise<{ actions: InstanceAction[]; retry?: string }> {
    const rest = actions.filter((a): a is Exclude<InstanceAction, { op: "network" }> => a.op !== "network");
    if (this.#network === undefined) return { actions: rest };
    const v = await this.#network.load(desired?.instances ?? [], new Set(this.#observed.map((d) => d.id)));
    if (v.failed.size === 0) return { actions: rest, ...(v.loadError ? { retry: v.loadError } : {}) };
    const out: InstanceAction[] = [];
    const stopped = new Set<string>();
    for (const a of rest) {
      const id = a.op === "define" ? a.record.id : a.id;
      if (a.op === "stop") stopped.add(id);
      // Deletes and stops still run; what would start, resume, define or pause a refused instance does not.
      if (!v.failed.has(id) || a.op === "delete" || a.op === "stop" || a.op === "fail") out.push(a);
    }
    for (const [id, message] of v.failed) {
      const d = this.#observed.find((o) => o.id === id);
      if (d?.record && d.state !== "stopped" && !stopped.has(id)) out.push({ op: "stop", runtime: d.runtime, id });
      out.push({ op: "fail", id, reason: NETWORK_POLICY_REASON, message });
    }
    return { actions: out, ...(v.loadError ? { retry: v.loadError } : {}) };
  }

  async apply(
    planned: readonly InstanceAction[],
    desired: InstancesSection | undefined,
    ctx: ApplyContext,
  ): Promise<ApplyOutcome> {
    const { actions, retry } = await this.#withNetwork(planned, desired);
    const failed: string[] = [];
    let transient: string | undefined = retry === undefined ? undefined : `network rules did not load: ${retry}`;
    for (const a of actions) {
      if (a.op === "fail") {
        this.#failed.set(a.id, { reason: a.reason, message: a.message });
        failed.push(`${a.id}: ${a.message}`);
        continue;
      }
      if (a.op === "network") continue;
      const rt = this.#runtimes.get(a.runtime)!;
      const id = a.op === "define" ? a.record.id : a.id;
      try {
        switch (a.op) {
          case "define":
            await rt.define(a.record);
            if (a.then !== "stopped") await rt.start(a.record.id, a.then === "paused");
            break;
          case "start":
            await rt.start(a.id, false);
            break;
          case "pause":
            await rt.pause(a.id);
            break;
          case "resume":
            await rt.resume(a.id);
            break;
          case "stop":
            await rt.stop(a.id);
            break;
          case "delete":
            await rt.delete(a.id);
            break;
        }
        this.#failed.delete(id);
        ctx.log.info({ instance: id, op: a.op }, "instance action done");
      } catch (e) {
        if (e instanceof RuntimeRefused) {
          this.#failed.set(id, { reason: e.reason, message: e.message });
          failed.push(`${id}: ${e.message}`);
        } else {
          transient = `${id}: ${e instanceof Error ? e.message : e}`;
          ctx.log.warn({ instance: id, op: a.op, err: transient }, "instance action failed; retrying next pass");
        }
      }
    }
    if (actions.some((a) => a.op !== "fail" && a.op !== "network")) await this.observe();
    if (transient) return { kind: "progressing", reason: "InstanceRetry", message: transient };
    if (failed.length > 0) return { kind: "failed", reason: "InstanceFailed", message: failed.join("; ") };
    return { kind: "converged" };
  }

  /** Every domain the runtimes hold, for `StatusReport.instances` (as of the last pass). */
  report(): InstanceReport[] {
    const STATE = { running: "RUNNING", paused: "PAUSED", stopped: "STOPPED" } as const;
    const why = (id: string) => {
      const f = this.#failed.get(id);
      return f === undefined ? "" : `${f.reason}: ${f.message}`;
    };
    const out: InstanceReport[] = this.#observed.map((d) => ({
      id: d.id,
      runtime: d.runtime,
      state: STATE[d.state],
      managed: d.record !== undefined,
      message: why(d.id),
      vcpus: d.record?.vcpus ?? 0,
      memoryBytes: d.record?.memoryBytes ?? 0,
    }));
    const seen = new Set(out.map((r) => r.id));
    for (const i of this.#desired) {
      const f = this.#failed.get(i.id ?? "");
      if (f && !seen.has(i.id ?? "")) {
        out.push({
          id: i.id ?? "",
          runtime: i.runtime ?? "",
          state: "ERROR",
          managed: true,
          message: `${f.reason}: ${f.message}`,
          vcpus: Number(i.vcpus ?? 0),
          memoryBytes: Number(i.memory_bytes ?? 0),
        });
      }
    }
    return out;
  }
}
