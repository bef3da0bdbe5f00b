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
 * A pass applies stops, pauses and deletes before defines, starts and resumes (448dc5f). With a host memory source,
 * every start of a domain that is not running passes host-side admission first ({@link admitStart}): one that does
 * not fit stays stopped with its `ResourcesExhausted: …` message, keeps the section `PROGRESSING` (not `ERROR`) and is
 * tried again on the next pass. A host whose memory cannot be read starts without the check, with a warning. A
 * non-empty section on a host with no runtime fails `this host runs no instance runtime`; an instance naming a
 * runtime this host lacks fails `runtime is not installed on this host`.
 *
 * `restore_from` (`snapshot_source.ts`): the ref is checked, its download runs in the background through the
 * {@link SnapshotFetcher} while the instance waits, and the define boots the runtime from it; every pass prunes the
 * snapshots no desired instance restores from.
 *
 * A root disk grows when the spec's `disk_bytes` differs from what this converger last defined or grew it to (a
 * `grow` after the pass's stops, before its starts; the runtime refuses a shrink `disk-shrink`). The GPUs of running
 * and paused domains ({@link InstancesConverger.passthrough}) and the memory they committed
 * ({@link InstancesConverger.committedBytes}) are what the devices side counts against holds and `gpu.reset`.
 *
 * User data is never in the spec: before an instance with a `user_data_ref` is defined, its user data is fetched from
 * the {@link SecretSource} (a `SecretRequest` bound to its allocation). The request runs beside the pass, as the
 * seed's snapshot downloads do (the instance waits "for the user data or snapshot"; its end wakes the loop and the
 * next pass takes the answer), since the session that carries the answer may be busy with the frame whose spec
 * started this pass. A refusal fails that instance
 * `user-data-refused`, an unavailable broker (or none) keeps it waiting and the section `PROGRESSING`, and the secret
 * goes onto the seed ISO only (never into a log or a status). One without a reference gets a seed carrying its NoCloud
 * meta-data and an empty user-data.
 *
 * Volumes (000 §Persistent volumes), with a {@link VolumeKeeper}: every apply first brings the store to the section's
 * `volumes` (created, grown, never shrunk, the space rule), before any define. An instance attaching a volume the
 * section does not list fails `volume-unlisted`; one attaching a refused volume does not start (a space refusal
 * waits, `PROGRESSING`, with the seed's message; a shrink or a bad spec fails with its reason); neither stops a
 * running VM. One writer: the keeper's tracker is rebuilt from the running and paused domains at each apply in spec
 * order (a later holder of a volume an earlier one holds is stopped and fails `volume-busy`: the only spec change that
 * makes a VM let go), and every start, define-and-start and live attach is checked against it (refused
 * `volume-busy`); stops and deletes release. A domain whose attachments differ from its spec's is brought to them
 * (`setVolumes`: hot-plugged running, redefined stopped) after the pass's stops and before its starts. A volume that
 * grew is resized live in every domain that holds it. After the pass, a volume the section no longer lists and no
 * desired instance attaches is destroyed, unless a domain still holds it open. Without a keeper, an instance with
 * volumes fails `volumes-unsupported`.
 *
 * @module
 */
import type { bcd } from "../../../proto/mod.ts";
import type { BalloonCandidate } from "../../balloon/port.ts";
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../engine.ts";
import { type InstanceNetwork, NETWORK_POLICY_REASON } from "./network.ts";
import type { HostMemory } from "../devices/admission.ts";
import type { HostMemorySource } from "../devices/ports.ts";
import type { PassthroughGpu } from "../devices/conflicts.ts";
import { admitStart, normalCommitmentBytes } from "./admission.ts";
import type { IdentityRebinder, RebindTarget } from "./identity_rebind.ts";
import { ReboundFileCorrupt } from "../../rebind/mod.ts";
import type { HugePageSize, PlanPlacement } from "./domain_plan.ts";
import { type Domain, type DomainRecord, type DomainState, type InstanceRuntime, RuntimeRefused } from "./runtime.ts";
import { type SnapshotFetcher, snapshotRefProblem, type SnapshotSource } from "./snapshot_source.ts";
import type { VolumeKeeper } from "../../volumes/keeper.ts";
import type { VolumeAttachment } from "../../volumes/grammar.ts";
import { VOLUME_BUSY } from "../../volumes/open_volumes.ts";
import type { VolumeStorage } from "../../volumes/space.ts";
import { attachmentsOf, sameVolumes, sectionSerials, VOLUMES_UNSUPPORTED } from "./volume_step.ts";
import {
  MAX_USER_DATA_BYTES,
  type SecretAnswer,
  type SecretSource,
  USER_DATA_REFUSED,
  WAITING_FOR_USER_DATA,
} from "./user_data.ts";

type InstancesSection = bcd.v1.InstancesSection.$Properties;
type InstanceSpec = bcd.v1.InstanceSpec.$Properties;

/** An observed domain with the runtime it lives on. */
export interface ObservedDomain extends Domain {
  readonly runtime: string;
}

/** One step of the plan. */
export type InstanceAction =
  | {
    readonly op: "define";
    readonly runtime: string;
    readonly record: DomainRecord;
    readonly then: DomainState;
    /** The user data to fetch before the define (`InstanceSpec.user_data_ref`). */
    readonly userDataRef?: string;
  }
  | { readonly op: "start" | "pause" | "resume" | "stop" | "delete"; readonly runtime: string; readonly id: string }
  /** Grow the root disk to `bytes` (planned when the spec's `disk_bytes` is not what this converger last grew to). */
  | { readonly op: "grow"; readonly runtime: string; readonly id: string; readonly bytes: number }
  /** Bring the domain's attached volumes to `volumes` (live when it runs or is paused). */
  | {
    readonly op: "volumes";
    readonly runtime: string;
    readonly id: string;
    readonly volumes: readonly VolumeAttachment[];
    readonly live: boolean;
  }
  | { readonly op: "fail"; readonly id: string; readonly reason: string; readonly message: string }
  /** Load the network rules (first of every plan when the converger has them, so they load before any start). */
  | { readonly op: "network" }
  /**
   * Bring the volume store to the section: planned on every pass of a host that keeps volumes (growth, destruction
   * and the `volume_storage` figures need it even when no instance changes; passes run on every spec and the drift
   * timer).
   */
  | { readonly op: "volume-store" }
  | { readonly op: "wait"; readonly id: string; readonly message: string }
  /** Hand the identity rebinder its targets (planned when it has something to do: see `identity_rebind.ts`). */
  | { readonly op: "rebind" };

/**
 * `StatusReport.instances` and `instances_complete`: what the runtimes hold, and whether that is everything (false
 * until every runtime has been listed, and whenever a runtime's last listing failed).
 */
export interface InstanceListing {
  readonly instances: readonly InstanceReport[];
  readonly complete: boolean;
  /** `StatusReport.volume_storage`, on a host that keeps volumes (as of the last pass). */
  readonly volumeStorage?: VolumeStorage;
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
  /** `InstanceStatus.identity_rebound_ref`: the spec's rebind reference once the guest answered it; "" before. */
  readonly identityReboundRef?: string;
}

const WANT: Record<number, DomainState | "deleted" | undefined> = {
  1: "running",
  2: "paused",
  3: "stopped",
  4: "deleted",
};

const _HUGE: Record<number, HugePageSize> = { 0: "none", 1: "2M", 2: "1G" };

function _placement(i: InstanceSpec): PlanPlacement | null {
  const p = i.placement;
  if (!p || (!p.cpus && !p.mems && !p.hugepages && !p.balloon)) return null;
  return { cpus: p.cpus ?? "", mems: p.mems ?? "", hugepages: _HUGE[p.hugepages ?? 0] ?? "none", balloon: !!p.balloon };
}

/** `restore_from`, when the spec names one. */
function _restoreFrom(i: InstanceSpec): SnapshotSource | undefined {
  const r = i.restore_from;
  if (!r || (!r.url && !r.sha256)) return undefined;
  return {
    url: r.url ?? "",
    sha256: r.sha256 ?? "",
    runtime: r.runtime ?? "",
    includeMemory: !!r.include_memory,
    cpuModel: r.cpu_model ?? "",
    sizeBytes: Number(r.size_bytes ?? 0),
  };
}

function _record(i: InstanceSpec): DomainRecord {
  const placement = _placement(i);
  const restoreFrom = _restoreFrom(i);
  const fmt = i.image?.format ?? "";
  return {
    id: i.id ?? "",
    allocationId: i.allocation_id ?? "",
    vcpus: Number(i.vcpus ?? 0),
    memoryBytes: Number(i.memory_bytes ?? 0),
    imageSha256: i.image?.sha256 ?? "",
    gpus: (i.gpus ?? []).map((g) => g.uuid ?? ""),
    ...(placement && placement.hugepages !== "none" ? { hugepages: placement.hugepages } : {}),
    launch: {
      image: i.image?.url
        ? { url: i.image.url, sha256: i.image.sha256 ?? "", format: (fmt === "" ? "qcow2" : fmt) as "qcow2" }
        : null,
      diskBytes: Number(i.disk_bytes ?? 0),
      nics: (i.nics ?? []).map((n) => ({ mac: n.mac ?? "", bridge: n.bridge ?? "" })),
      gpus: (i.gpus ?? []).map((g) => ({ uuid: g.uuid ?? "", pciBusId: g.pci_bus_id ?? "" })),
      placement,
      hostname: i.hostname ?? "",
      userData: new Uint8Array(0),
      ...(restoreFrom ? { restoreFrom } : {}),
      sshFromHostOnly: !!i.ssh_from_host_only,
      identityRebindRef: i.identity_rebind_ref ?? "",
      guarded: !!i.ssh_from_host_only || (i.network_policy !== undefined && i.network_policy !== null),
    },
  };
}

/** Options of {@link InstancesConverger}. */
export interface InstancesConvergerOptions {
  /** The instances' nftables rules, loaded at the start of every apply, before any domain starts. */
  readonly network?: InstanceNetwork;
  /** The host's memory for start admission; without it starts are not admitted (a runtime that checks itself). */
  readonly memory?: HostMemorySource;
  /** Bytes the bound device holds committed (their memory limits), counted against normal memory. */
  readonly holdsCommittedBytes?: () => Promise<number>;
  /** The snapshot downloads of `restore_from`; without it such an instance fails (this host restores none). */
  readonly snapshots?: SnapshotFetcher;
  /** The SecretRequest broker user data comes from; without it an instance with a `user_data_ref` waits. */
  readonly secrets?: SecretSource;
  /** Asks for a pass soon (a user data request ended); the node makes its next tick due. */
  readonly wake?: () => void;
  /** The host's volume store; without it an instance with volumes fails `volumes-unsupported`. */
  readonly volumes?: VolumeKeeper;
  /** Identity rebind (`identity_rebind.ts`): considered after every pass; its records are reported. */
  readonly rebinder?: IdentityRebinder;
}

/** Order of a pass: failures and waits, then what frees resources, then what takes them. */
const _ORDER: Record<InstanceAction["op"], number> = {
  network: 0,
  "volume-store": 0,
  fail: 0,
  wait: 0,
  delete: 1,
  stop: 1,
  pause: 1,
  volumes: 1.5,
  define: 2,
  grow: 2,
  start: 2,
  resume: 2,
  rebind: 3,
};

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
  readonly #opts: InstancesConvergerOptions;
  #failed = new Map<string, { reason: string; message: string }>();
  /** User data the control plane refused, by instance: its reference and why (not asked again for that reference). */
  #refusedUserData = new Map<string, { ref: string; message: string }>();
  /** The root disk size each instance was last defined with or grown to, so an unchanged spec plans no grow. */
  #grown = new Map<string, number>();
  /** User data requests by instance: the reference, and the answer once it came (taken by the next pass). */
  #userData = new Map<string, { ref: string; answer?: SecretAnswer }>();
  /** Instances waiting (admission, user data): their message, shown with their state. */
  #waiting = new Map<string, string>();
  #observed: ObservedDomain[] = [];
  #desired: InstanceSpec[] = [];
  /** Runtimes whose last listing failed, with why; every runtime until it was first listed. */
  #unlisted = new Map<string, string>();
  /** Each desired instance's attachments as of the last plan. */
  #attachments = new Map<string, readonly VolumeAttachment[]>();

  readonly #network: InstanceNetwork | undefined;

  /** `network`: the instances' nftables rules, loaded at the start of every apply, before any domain starts. */
  constructor(runtimes: readonly InstanceRuntime[], opts: InstancesConvergerOptions = {}) {
    this.#runtimes = new Map(runtimes.map((r) => [r.name, r]));
    this.#network = opts.network;
    for (const r of runtimes) this.#unlisted.set(r.name, "not listed yet");
    this.#opts = opts;
  }

  /** The desired spec of instance `id` as of the last pass (`instance.snapshot` reads its volumes). */
  specOf(id: string): InstanceSpec | undefined {
    return this.#desired.find((i) => i.id === id);
  }

  /**
   * The GPUs passed through to running or paused managed domains, as of the last listing: busy for new holds
   * (`overlap`) and for `gpu.reset` (`gpu-busy`), naming the instance.
   */
  passthrough(): PassthroughGpu[] {
    return this.#observed.filter((d) => d.record && d.state !== "stopped")
      .flatMap((d) => d.record!.gpus.filter((g) => g !== "").map((gpuUuid) => ({ gpuUuid, instance: d.id })));
  }

  /** The normal memory running and paused managed domains committed (memory plus VMM overhead), for hold admission. */
  committedBytes(): number {
    let sum = 0;
    for (const d of this.#observed) {
      if (d.record && d.state !== "stopped") {
        sum += normalCommitmentBytes(d.record.memoryBytes, d.record.hugepages ?? "none");
      }
    }
    return sum;
  }

  /**
   * The guests the balloon loop may resize (000 §Memory ballooning): running, managed domains whose desired spec asks
   * for a balloon and not for huge pages, as of the last listing.
   */
  balloonCandidates(): BalloonCandidate[] {
    const out: BalloonCandidate[] = [];
    for (const i of this.#desired) {
      const p = _placement(i);
      if (!p?.balloon || p.hugepages !== "none") continue;
      const d = this.#observed.find((o) => o.id === i.id && o.runtime === i.runtime);
      if (d?.record && d.state === "running") {
        out.push({ id: d.id, runtime: d.runtime, memoryBytes: d.record.memoryBytes });
      }
    }
    return out;
  }

  /** The runtimes this converger drives, by name (advertised in `Hello`). */
  get runtimeNames(): string[] {
    return [...this.#runtimes.keys()];
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
    const storage = this.#opts.volumes?.storage();
    return {
      instances: this.report(),
      complete: this.#unlisted.size === 0,
      ...(storage ? { volumeStorage: storage } : {}),
    };
  }

  plan(desired: InstancesSection | undefined, observed: ObservedDomain[]): InstanceAction[] {
    const want = desired?.instances ?? [];
    this.#desired = want;
    const byId = new Map(observed.map((d) => [d.id, d]));
    const serials = sectionSerials(desired);
    this.#attachments.clear();
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
        const message = this.#runtimes.size === 0
          ? "this host runs no instance runtime"
          : `runtime ${JSON.stringify(runtime)}: runtime is not installed on this host`;
        out.push({ op: "fail", id, reason: "unknown-runtime", message });
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
      const atts = attachmentsOf(i, serials);
      if ((i.volumes ?? []).length > 0 && !this.#opts.volumes) {
        out.push({ op: "fail", id, reason: VOLUMES_UNSUPPORTED, message: "this host keeps no volumes" });
        continue;
      }
      if ((i.volumes ?? []).length > 0 && !this.#runtimes.get(runtime)?.setVolumes) {
        out.push({ op: "fail", id, reason: VOLUMES_UNSUPPORTED, message: `${runtime} attaches no volumes` });
        continue;
      }
      if ("problem" in atts) {
        out.push({ op: "fail", id, reason: atts.reason, message: atts.problem });
        continue;
      }
      this.#attachments.set(id, atts.volumes);
      const restore = !have ? _restoreFrom(i) : undefined;
      if (restore) {
        const step = this.#restoreStep(id, runtime, restore);
        if (step) {
          out.push(step);
          continue;
        }
      }
      if (!have && i.user_data_ref && !this.#opts.secrets) {
        out.push({ op: "wait", id, message: `${WAITING_FOR_USER_DATA}: this agent has no SecretRequest broker` });
        continue;
      }
      const refused = this.#refusedUserData.get(id);
      if (!have && refused && refused.ref === i.user_data_ref) {
        out.push({ op: "fail", id, reason: USER_DATA_REFUSED, message: refused.message });
        continue;
      }
      if (!have) {
        const ref = i.user_data_ref ? { userDataRef: i.user_data_ref } : {};
        const record = atts.volumes.length > 0 ? { ..._record(i), volumes: atts.volumes } : _record(i);
        out.push({ op: "define", runtime, record, then: target, ...ref });
        continue;
      }
      if (!sameVolumes(have.record?.volumes ?? [], atts.volumes)) {
        if (!this.#runtimes.get(have.runtime)?.setVolumes) {
          out.push({
            op: "fail",
            id,
            reason: VOLUMES_UNSUPPORTED,
            message: `${have.runtime} cannot attach volumes to a defined domain`,
          });
          continue;
        }
        out.push({ op: "volumes", runtime: have.runtime, id, volumes: atts.volumes, live: have.state !== "stopped" });
      }
      const disk = Number(i.disk_bytes ?? 0);
      if (disk > 0 && this.#grown.get(id) !== disk) {
        const rt = this.#runtimes.get(have.runtime);
        if (!rt?.grow) {
          out.push({ op: "fail", id, reason: "disk-grow-unsupported", message: `${have.runtime} cannot grow disks` });
          continue;
        }
        out.push({ op: "grow", runtime: have.runtime, id, bytes: disk });
      }
      out.push(..._transition(have.runtime, id, have.state, target));
    }
    for (const d of observed) {
      if (d.record && !wanted.has(d.id)) out.push({ op: "delete", runtime: d.runtime, id: d.id });
    }
    for (const id of this.#refusedUserData.keys()) if (!wanted.has(id)) this.#refusedUserData.delete(id);
    for (const id of this.#grown.keys()) if (!wanted.has(id)) this.#grown.delete(id);
    for (const id of this.#userData.keys()) if (!wanted.has(id)) this.#userData.delete(id);
    if (this.#opts.volumes) out.push({ op: "volume-store" });
    if (this.#opts.rebinder?.wants(this.#rebindTargets(want, observed), wanted)) out.push({ op: "rebind" });
    const sorted = out.map((a, n) => ({ a, n })).sort((x, y) => _ORDER[x.a.op] - _ORDER[y.a.op] || x.n - y.n)
      .map((x) => x.a);
    return this.#network === undefined ? sorted : [{ op: "network" }, ...sorted];
  }

  /** What an instance restoring from `src` does this pass: fail, wait, or nothing (`undefined`: define it). */
  #restoreStep(id: string, runtime: string, src: SnapshotSource): InstanceAction | undefined {
    const bad = snapshotRefProblem(src, runtime);
    if (bad) return { op: "fail", id, reason: bad[0], message: bad[1] };
    if (!this.#opts.snapshots) {
      return { op: "fail", id, reason: "snapshot-unsupported", message: "this host restores no snapshots" };
    }
    const s = this.#opts.snapshots.poll(src);
    if (s.state === "ready") return undefined;
    if (s.state === "downloading") {
      return { op: "wait", id, message: `waiting for the user data or snapshot: snapshot ${src.sha256} downloading` };
    }
    if (s.terminal) return { op: "fail", id, reason: s.reason, message: s.message };
    return {
      op: "wait",
      id,
      message:
        `waiting for the user data or snapshot: snapshot download failed (${s.message}); tried again in a minute`,
    };
  }

  /**
   * The network rules' step (000 §Instances): loads the rules before any action, then turns each instance they refuse
   * into a `fail` action, dropping its start-like actions and stopping its domain when it runs.
   */
  async #withNetwork(
    actions: readonly InstanceAction[],
    desired: InstancesSection | undefined,
  ): Promise<{ actions: InstanceAction[]; retry?: string }> {
    const rest = actions.filter((a) => a.op !== "network");
    if (this.#network === undefined) return { actions: rest };
    const v = await this.#network.load(desired?.instances ?? [], new Set(this.#observed.map((d) => d.id)));
    if (v.failed.size === 0) return { actions: rest, ...(v.loadError ? { retry: v.loadError } : {}) };
    const out: InstanceAction[] = [];
    const stopped = new Set<string>();
    for (const a of rest) {
      if (a.op === "volume-store" || a.op === "rebind") {
        out.push(a);
        continue;
      }
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

  /**
   * The volume step before the pass's actions: brings the store to the section, rebuilds the open-volume tracker in
   * spec order (a later holder of what an earlier one holds is stopped and fails `volume-busy`), and keeps every
   * instance attaching a refused volume from starting (a space refusal waits; the others fail), never stopping it.
   */
  async #withVolumes(
    actions: InstanceAction[],
    desired: InstancesSection | undefined,
    ctx: ApplyContext,
  ): Promise<{ actions: InstanceAction[]; grown: ReadonlyMap<string, number>; retry?: string }> {
    const keeper = this.#opts.volumes;
    if (!keeper) return { actions, grown: new Map() };
    const want = desired?.instances ?? [];
    const holding = (d: ObservedDomain) => d.record !== undefined && d.state !== "stopped";
    const desiredIds = new Set(want.map((i) => i.id ?? ""));
    keeper.open.reset(
      this.#observed.filter((d) => holding(d) && !desiredIds.has(d.id))
        .map((d) => ({ id: d.id, volumes: d.record!.volumes ?? [] })),
    );
    const letGo = new Map<string, { runtime: string; message: string }>();
    for (const i of want) {
      const d = this.#observed.find((o) => o.id === i.id);
      if (!d || !holding(d) || (d.record!.volumes ?? []).length === 0) continue;
      const busy = keeper.open.conflict(d.id, d.record!.volumes!);
      if (busy) letGo.set(d.id, { runtime: d.runtime, message: busy });
      else keeper.open.open(d.id, d.record!.volumes!);
    }
    let verdicts;
    try {
      verdicts = await keeper.prepare(desired?.volumes ?? []);
    } catch (e) {
      const why = `volume store: ${e instanceof Error ? e.message : String(e)}`;
      ctx.log.warn({ err: why }, "volumes not prepared; instances with volumes wait for the next pass");
      const uses = (id: string) => (this.#attachments.get(id) ?? []).length > 0;
      return { actions: actions.filter((a) => a.op !== "define" || !uses(a.record.id)), grown: new Map(), retry: why };
    }
    const blocked = new Map<string, { reason: string; message: string; wait: boolean }>();
    for (const [id, atts] of this.#attachments) {
      for (const v of atts) {
        const r = verdicts.refused.get(v.volumeId);
        if (r) {
          blocked.set(id, { reason: r.reason, message: r.message, wait: r.reason === "volume-space" });
          break;
        }
      }
    }
    const out: InstanceAction[] = [];
    for (const a of actions) {
      const id = a.op === "define"
        ? a.record.id
        : a.op === "network" || a.op === "volume-store" || a.op === "rebind"
        ? ""
        : a.id;
      const starts = a.op === "define" || a.op === "start" || a.op === "resume" || a.op === "volumes";
      if (letGo.has(id) && a.op !== "delete" && a.op !== "fail") continue;
      if (blocked.has(id) && starts) continue;
      out.push(a);
    }
    for (const [id, g] of letGo) {
      out.unshift({ op: "stop", runtime: g.runtime, id });
      out.push({ op: "fail", id, reason: VOLUME_BUSY, message: g.message });
    }
    for (const [id, b] of blocked) {
      out.push(
        b.wait ? { op: "wait", id, message: b.message } : { op: "fail", id, reason: b.reason, message: b.message },
      );
    }
    return { actions: out, grown: verdicts.grown };
  }

  /** Resizes each grown volume live in every domain that holds it; the first failure, for a retry. */
  async #growLive(grown: ReadonlyMap<string, number>, ctx: ApplyContext): Promise<string | undefined> {
    const open = this.#opts.volumes?.open;
    if (!open) return undefined;
    let retry: string | undefined;
    for (const [vid, bytes] of grown) {
      for (const id of open.holders(vid)) {
        const d = this.#observed.find((o) => o.id === id);
        const rt = d ? this.#runtimes.get(d.runtime) : undefined;
        if (!rt?.growVolume) continue;
        try {
          await rt.growVolume(id, vid, bytes);
          ctx.log.info({ instance: id, volume: vid, bytes }, "volume resized live");
        } catch (e) {
          retry ??= `${id}: volume ${vid} not resized live: ${e instanceof Error ? e.message : e}`;
          ctx.log.warn({ instance: id, volume: vid, err: String(e) }, "volume not resized live; retrying next pass");
        }
      }
    }
    return retry;
  }

  /**
   * After the pass: the tracker from what runs now, then the volumes the section no longer lists and no desired
   * instance attaches are destroyed (never one a domain holds open). A failure is kept for a retry.
   */
  async #afterVolumes(desired: InstancesSection | undefined, ctx: ApplyContext): Promise<string | undefined> {
    const keeper = this.#opts.volumes;
    if (!keeper) return undefined;
    keeper.open.reset(
      this.#observed.filter((d) => d.record && d.state !== "stopped")
        .map((d) => ({ id: d.id, volumes: d.record!.volumes ?? [] })),
    );
    const attached = new Set(
      (desired?.instances ?? []).filter((i) => (WANT[i.state ?? 0] ?? "running") !== "deleted")
        .flatMap((i) => (i.volumes ?? []).map((v) => v.volume_id ?? "")),
    );
    try {
      const gone = await keeper.destroyUnlisted(attached);
      if (gone.length > 0) ctx.log.info({ volumes: gone }, "unlisted volumes destroyed");
      return undefined;
    } catch (e) {
      const why = `volume store: ${e instanceof Error ? e.message : String(e)}`;
      ctx.log.warn({ err: why }, "unlisted volumes not destroyed; retrying next pass");
      return why;
    }
  }

  /** Host memory and the normal memory committed now, or `undefined` when starts go unchecked. */
  async #admissionBase(ctx: ApplyContext): Promise<{ host: HostMemory; committed: number } | undefined> {
    if (!this.#opts.memory) return undefined;
    let host: HostMemory;
    try {
      host = await this.#opts.memory.read();
    } catch (e) {
      ctx.log.warn(
        { err: e instanceof Error ? e.message : String(e) },
        "host memory unreadable; starting without admission",
      );
      return undefined;
    }
    let committed = (await this.#opts.holdsCommittedBytes?.()) ?? 0;
    for (const d of this.#observed) {
      if (d.record && d.state !== "stopped") {
        committed += normalCommitmentBytes(d.record.memoryBytes, d.record.hugepages ?? "none");
      }
    }
    return { host, committed };
  }

  /** A domain this pass stopped or deleted gives its commitment back to the starts after it. */
  #release(base: { committed: number } | undefined, id: string): void {
    const d = this.#observed.find((o) => o.id === id);
    if (base && d?.record && d.state !== "stopped") {
      base.committed -= normalCommitmentBytes(d.record.memoryBytes, d.record.hugepages ?? "none");
    }
  }

  /** Admits a start of `rec` (host-side admission); records the wait and returns false when it does not fit. */
  #admit(base: { host: HostMemory; committed: number } | undefined, rec: DomainRecord, id: string): boolean {
    if (!base) return true;
    const mems = (this.#desired.find((i) => i.id === id)?.placement?.mems ?? "").split(",").filter(Boolean)
      .flatMap((part) => {
        const [a, b] = part.split("-").map(Number) as [number, number | undefined];
        return Array.from({ length: (b ?? a) - a + 1 }, (_, k) => a + k);
      });
    const r = admitStart(
      { memoryBytes: rec.memoryBytes, hugepages: rec.hugepages ?? "none", mems },
      base.host,
      base.committed,
    );
    if (!r.ok) {
      this.#waiting.set(id, r.message);
      return false;
    }
    base.committed += r.bytes;
    return true;
  }

  /**
   * The define's record with its user data fetched (a `SecretRequest` bound to the allocation), `{ failed }` when the
   * control plane refused it (or it is too large), `{ wait }` when the broker is unavailable. The secret is never
   * logged.
   */
  #withUserData(
    a: Extract<InstanceAction, { op: "define" }>,
  ): DomainRecord | { failed: string } | { wait: string } {
    const ref = a.userDataRef;
    if (!ref) return a.record;
    const secrets = this.#opts.secrets;
    if (!secrets) return { wait: `${WAITING_FOR_USER_DATA}: this agent has no SecretRequest broker` };
    const id = a.record.id;
    const have = this.#userData.get(id);
    if (!have || have.ref !== ref) {
      // The request runs beside the pass (the session that answers it may be waiting on this very pass); its end
      // wakes the loop, and the next pass takes the answer.
      const entry: { ref: string; answer?: SecretAnswer } = { ref };
      this.#userData.set(id, entry);
      const q = { purpose: "user-data", ref, allocationId: a.record.allocationId, instanceId: id };
      void secrets.fetch(q).catch((e) => ({
        status: "unavailable" as const,
        message: e instanceof Error ? e.message : String(e),
      })).then((answer) => {
        entry.answer = answer;
        this.#opts.wake?.();
      });
      return { wait: `${WAITING_FOR_USER_DATA}: SecretRequest sent` };
    }
    const r = have.answer;
    if (!r) return { wait: `${WAITING_FOR_USER_DATA}: SecretRequest sent` };
    this.#userData.delete(id);
    if (r.status === "refused") return { failed: `the control plane refused its user data: ${r.message}` };
    if (r.status === "unavailable") return { wait: `${WAITING_FOR_USER_DATA}: ${r.message}` };
    if (r.secret.length > MAX_USER_DATA_BYTES) {
      return { failed: `its user data is ${r.secret.length} bytes; at most ${MAX_USER_DATA_BYTES} go on a seed` };
    }
    if (!a.record.launch) return a.record;
    return { ...a.record, launch: { ...a.record.launch, userData: r.secret } };
  }

  async apply(
    planned: readonly InstanceAction[],
    desired: InstancesSection | undefined,
    ctx: ApplyContext,
  ): Promise<ApplyOutcome> {
    const net = await this.#withNetwork(planned, desired);
    const vol = await this.#withVolumes(net.actions, desired, ctx);
    const actions = vol.actions;
    const open = this.#opts.volumes?.open;
    const failed: string[] = [];
    let transient: string | undefined = net.retry !== undefined
      ? `network rules did not load: ${net.retry}`
      : vol.retry;
    const waits: string[] = [];
    this.#waiting.clear();
    const base = actions.some((a) => a.op === "start" || (a.op === "define" && a.then !== "stopped"))
      ? await this.#admissionBase(ctx)
      : undefined;
    for (const a of actions) {
      if (a.op === "fail") {
        this.#failed.set(a.id, { reason: a.reason, message: a.message });
        failed.push(`${a.id}: ${a.message}`);
        continue;
      }
      if (a.op === "network" || a.op === "volume-store" || a.op === "rebind") continue;
      if (a.op === "wait") {
        this.#waiting.set(a.id, a.message);
        waits.push(`${a.id}: ${a.message}`);
        continue;
      }
      const rt = this.#runtimes.get(a.runtime)!;
      const id = a.op === "define" ? a.record.id : a.id;
      try {
        switch (a.op) {
          case "define": {
            const record = this.#withUserData(a);
            if ("failed" in record) {
              this.#refusedUserData.set(id, { ref: a.userDataRef ?? "", message: record.failed });
              this.#failed.set(id, { reason: USER_DATA_REFUSED, message: record.failed });
              failed.push(`${id}: ${record.failed}`);
              continue;
            }
            if ("wait" in record) {
              this.#waiting.set(id, record.wait);
              waits.push(`${id}: ${record.wait}`);
              continue;
            }
            await rt.define(record);
            if ((record.launch?.diskBytes ?? 0) > 0) this.#grown.set(id, record.launch!.diskBytes);
            if (a.then !== "stopped") {
              const busy = open?.conflict(id, record.volumes ?? []);
              if (busy) {
                this.#failed.set(id, { reason: VOLUME_BUSY, message: busy });
                failed.push(`${id}: ${busy}`);
                continue;
              }
              if (this.#admit(base, a.record, id)) {
                await rt.start(a.record.id, a.then === "paused");
                open?.open(id, record.volumes ?? []);
              } else waits.push(`${id}: ${this.#waiting.get(id)}`);
            }
            break;
          }
          case "start": {
            const rec = this.#observed.find((d) => d.id === a.id)?.record;
            const volumes = this.#attachments.get(id) ?? rec?.volumes ?? [];
            const busy = open?.conflict(id, volumes);
            if (busy) {
              this.#failed.set(id, { reason: VOLUME_BUSY, message: busy });
              failed.push(`${id}: ${busy}`);
              continue;
            }
            if (!rec || this.#admit(base, rec, id)) {
              await rt.start(a.id, false);
              open?.open(id, volumes);
            } else waits.push(`${id}: ${this.#waiting.get(id)}`);
            break;
          }
          case "volumes": {
            const busy = a.live ? open?.conflict(id, a.volumes) : undefined;
            if (busy) {
              // A pending attach: the VM keeps running with what it has.
              this.#failed.set(id, { reason: VOLUME_BUSY, message: busy });
              failed.push(`${id}: ${busy}`);
              continue;
            }
            await rt.setVolumes!(a.id, a.volumes);
            if (a.live) open?.open(id, a.volumes);
            break;
          }
          case "grow":
            await rt.grow!(a.id, a.bytes);
            this.#grown.set(a.id, a.bytes);
            break;
          case "pause":
            await rt.pause(a.id);
            break;
          case "resume":
            await rt.resume(a.id);
            break;
          case "stop":
            await rt.stop(a.id);
            this.#release(base, a.id);
            open?.close(a.id);
            break;
          case "delete":
            await rt.delete(a.id);
            this.#release(base, a.id);
            open?.close(a.id);
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
    transient = (await this.#growLive(vol.grown, ctx)) ?? transient;
    if (
      actions.some((a) =>
        a.op !== "fail" && a.op !== "network" && a.op !== "wait" && a.op !== "volume-store" && a.op !== "rebind"
      )
    ) {
      await this.observe();
    }
    transient = (await this.#afterVolumes(desired, ctx)) ?? transient;
    await this.#rebind(desired, ctx);
    if (this.#opts.snapshots) {
      const keep = new Set(
        (desired?.instances ?? []).map((i) => _restoreFrom(i)?.sha256).filter((s) => s !== undefined),
      );
      const pruned = await this.#opts.snapshots.prune(keep);
      if (pruned.length > 0) ctx.log.info({ snapshots: pruned }, "downloaded snapshots no spec restores from deleted");
    }
    if (transient) return { kind: "progressing", reason: "InstanceRetry", message: transient };
    // An instance still waiting (admission, user data) keeps the section PROGRESSING even when another failed: a
    // FAILED section is retried only by the drift pass, and the wait must be tried again on the next pass. The failed
    // instances stay ERROR in the report and their messages stay in the section's.
    if (waits.length > 0) {
      const reason = waits.some((w) => w.includes("ResourcesExhausted")) ? "ResourcesExhausted" : "InstanceWaiting";
      return { kind: "progressing", reason, message: [...waits, ...failed].join("; ") };
    }
    if (failed.length > 0) return { kind: "failed", reason: "InstanceFailed", message: failed.join("; ") };
    return { kind: "converged" };
  }

  /** The running, managed instances whose spec carries a rebind reference. */
  #rebindTargets(want: readonly InstanceSpec[], observed: readonly ObservedDomain[]): RebindTarget[] {
    const targets: RebindTarget[] = [];
    for (const i of want) {
      if (!i.identity_rebind_ref) continue;
      const d = observed.find((o) => o.id === i.id && o.runtime === i.runtime);
      if (d?.record && d.state === "running") {
        targets.push({ id: d.id, runtime: d.runtime, allocationId: i.allocation_id ?? "", ref: i.identity_rebind_ref });
      }
    }
    return targets;
  }

  /** Hands the rebinder the running instances whose spec carries a rebind reference (000 §Identity rebind). */
  async #rebind(desired: InstancesSection | undefined, ctx: ApplyContext): Promise<void> {
    const r = this.#opts.rebinder;
    if (!r) return;
    const want = desired?.instances ?? [];
    try {
      await r.consider(this.#rebindTargets(want, this.#observed), new Set(want.map((i) => i.id ?? "")));
    } catch (e) {
      if (!(e instanceof ReboundFileCorrupt)) throw e;
      ctx.log.error({ err: e.message }, "identity rebind: the records file is corrupt; nothing is rebound or reported");
    }
  }

  /** Every domain the runtimes hold, for `StatusReport.instances` (as of the last pass). */
  report(): InstanceReport[] {
    const STATE = { running: "RUNNING", paused: "PAUSED", stopped: "STOPPED" } as const;
    const why = (id: string) => {
      const f = this.#failed.get(id);
      return f === undefined ? "" : `${f.reason}: ${f.message}`;
    };
    const rebound = (id: string) => {
      const ref = this.#desired.find((i) => i.id === id)?.identity_rebind_ref ?? "";
      return this.#opts.rebinder?.reboundRef(id, ref) ?? "";
    };
    const out: InstanceReport[] = this.#observed.map((d) => ({
      id: d.id,
      runtime: d.runtime,
      state: STATE[d.state],
      managed: d.record !== undefined,
      message: this.#waiting.get(d.id) ?? why(d.id),
      vcpus: d.record?.vcpus ?? 0,
      memoryBytes: d.record?.memoryBytes ?? 0,
      ...(d.record ? { identityReboundRef: rebound(d.id) } : {}),
    }));
    const seen = new Set(out.map((r) => r.id));
    for (const i of this.#desired) {
      const f = this.#failed.get(i.id ?? "");
      const w = this.#waiting.get(i.id ?? "");
      if (!f && w && !seen.has(i.id ?? "")) {
        out.push({
          id: i.id ?? "",
          runtime: i.runtime ?? "",
          state: "PENDING",
          managed: true,
          message: w,
          vcpus: Number(i.vcpus ?? 0),
          memoryBytes: Number(i.memory_bytes ?? 0),
        });
      }
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
