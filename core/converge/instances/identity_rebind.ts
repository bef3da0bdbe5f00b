/**
 * The identity rebind driver (000 §Identity rebind, steps 1 and 5), beside the instances converger: once an instance
 * whose spec carries `identity_rebind_ref` runs, it fetches the bundle with a `SecretRequest` (purpose
 * `identity-rebind`, bound to the instance's allocation), checks it ({@link parseRebind}) and hands the runtime one
 * try ({@link RebindRuntime.rebind}). It works off the converge pass (a try takes up to 2 minutes): the converger
 * calls {@link IdentityRebinder.consider} after each pass and the tries run beside it, waking the loop when one ends.
 *
 * On success the reference is recorded in `data_dir/instances-rebound.json` and reported as
 * `InstanceStatus.identity_rebound_ref` ({@link IdentityRebinder.reboundRef}); instances no spec names any more are
 * pruned from the file. A guest that does not answer (or a try that fails) is tried at most 3 times per reference,
 * 5 minutes apart; a bundle the control plane refuses to release, or a malformed one, is not retried. Nothing is
 * reported then: the control plane keeps refusing exec while the identity is shared (fail closed). An unavailable
 * broker is no try: it is asked again 5 minutes later. A new reference starts over.
 *
 * @module
 */
import type { Clock, Timer } from "../../clock.ts";
import type { Logger } from "../../log/mod.ts";
import { parseRebind, rebindImage, RebindMalformed, rebindNonce, type ReboundStore } from "../../rebind/mod.ts";
import type { SecretSource } from "./user_data.ts";

/** What a runtime that rebinds offers: one try on a running instance (true when the guest answered). */
export interface RebindRuntime {
  rebind(id: string, image: Uint8Array, nonce: string): Promise<boolean>;
}

/** A running instance whose spec carries a rebind reference. */
export interface RebindTarget {
  readonly id: string;
  readonly runtime: string;
  readonly allocationId: string;
  readonly ref: string;
}

/** Tries per reference. */
export const REBIND_MAX_TRIES = 3;
/** Between tries. */
export const REBIND_RETRY_MS = 5 * 60_000;

/** Options of {@link IdentityRebinder}. */
export interface IdentityRebinderOptions {
  readonly store: ReboundStore;
  /** The SecretRequest broker; without it nothing is fetched (and nothing reported). */
  readonly secrets?: SecretSource;
  /** The runtime by name, when it rebinds. */
  readonly runtime: (name: string) => RebindRuntime | undefined;
  /** Retries are due on this clock; a timer wakes the loop when one is. */
  readonly clock: Pick<Clock, "monotonic" | "setTimer">;
  readonly log: Logger;
  /** Asks for a pass soon (a try ended). */
  readonly wake?: () => void;
}

interface _State {
  ref: string;
  tries: number;
  nextAt: number;
  running: boolean;
  /** Why it is not tried again. */
  gaveUp?: string;
}

/** See the module doc. */
export class IdentityRebinder {
  readonly #o: IdentityRebinderOptions;
  #records: Record<string, string> | undefined;
  readonly #state = new Map<string, _State>();
  readonly #jobs = new Set<Promise<void>>();
  readonly #timers = new Set<Timer>();

  constructor(opts: IdentityRebinderOptions) {
    this.#o = opts;
  }

  /** Reads `instances-rebound.json` (once; later calls keep what is in memory). */
  async load(): Promise<void> {
    this.#records ??= await this.#o.store.load();
  }

  /** The reference instance `id` was rebound with, when it is `ref` (the spec's now); "" otherwise. */
  reboundRef(id: string, ref: string): string {
    return ref !== "" && this.#records?.[id] === ref ? ref : "";
  }

  /** Tries so far, whether one is in flight, and why it stopped, for instance `id` (tests, logs). */
  progress(
    id: string,
  ): { readonly ref: string; readonly tries: number; readonly running: boolean; readonly gaveUp?: string } | undefined {
    const s = this.#state.get(id);
    return s && { ref: s.ref, tries: s.tries, running: s.running, ...(s.gaveUp ? { gaveUp: s.gaveUp } : {}) };
  }

  /** Cancels the retry timers and waits for the tries in flight. */
  async stop(): Promise<void> {
    for (const t of this.#timers) t.cancel();
    this.#timers.clear();
    await this.settled();
  }

  /** Waits for the tries in flight (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#jobs.size > 0) await Promise.all([...this.#jobs]);
  }

  /**
   * Whether {@link consider} has something to do for these targets now (records to load or prune, a try due): the
   * converger plans a `rebind` step only then, so a settled section stays idle.
   */
  wants(targets: readonly RebindTarget[], desired: ReadonlySet<string>): boolean {
    const records = this.#records;
    if (records === undefined) return true;
    if (Object.keys(records).some((id) => !desired.has(id))) return true;
    if ([...this.#state.keys()].some((id) => !desired.has(id))) return true;
    if (!this.#o.secrets) return false;
    const now = this.#o.clock.monotonic();
    return targets.some((t) => {
      if (records[t.id] === t.ref || !this.#o.runtime(t.runtime)) return false;
      const s = this.#state.get(t.id);
      return !s || s.ref !== t.ref || (!s.running && s.gaveUp === undefined && now >= s.nextAt);
    });
  }

  /**
   * After a pass: prunes instances no spec names (`desired`), then starts a try for each running target that is due
   * (not rebound with its reference, not given up, no try in flight, its retry time come).
   */
  async consider(targets: readonly RebindTarget[], desired: ReadonlySet<string>): Promise<void> {
    await this.load();
    const records = this.#records!;
    const stale = Object.keys(records).filter((id) => !desired.has(id));
    if (stale.length > 0) {
      for (const id of stale) delete records[id];
      await this.#o.store.save(records);
    }
    for (const id of this.#state.keys()) if (!desired.has(id)) this.#state.delete(id);
    const now = this.#o.clock.monotonic();
    for (const t of targets) {
      if (records[t.id] === t.ref) continue;
      const rt = this.#o.runtime(t.runtime);
      if (!rt || !this.#o.secrets) continue;
      let s = this.#state.get(t.id);
      if (!s || s.ref !== t.ref) {
        s = { ref: t.ref, tries: 0, nextAt: now, running: false };
        this.#state.set(t.id, s);
      }
      if (s.running || s.gaveUp !== undefined || now < s.nextAt) continue;
      s.running = true;
      const job = this.#try(t, s, rt, this.#o.secrets).finally(() => {
        s.running = false;
        this.#jobs.delete(job);
        this.#o.wake?.();
      });
      this.#jobs.add(job);
    }
  }

  /** Makes the next try due in 5 minutes, and wakes the loop then. */
  #later(s: _State): void {
    s.nextAt = this.#o.clock.monotonic() + REBIND_RETRY_MS;
    const t = this.#o.clock.setTimer(REBIND_RETRY_MS, () => {
      this.#timers.delete(t);
      this.#o.wake?.();
    });
    this.#timers.add(t);
  }

  async #try(t: RebindTarget, s: _State, rt: RebindRuntime, secrets: SecretSource): Promise<void> {
    const log = this.#o.log;
    const a = await secrets.fetch({
      purpose: "identity-rebind",
      ref: t.ref,
      allocationId: t.allocationId,
      instanceId: t.id,
    });
    if (a.status === "refused") {
      s.gaveUp = `the control plane refused the bundle: ${a.message}`;
      log.warn({ instance: t.id, reason: "rebind-refused" }, `identity rebind: ${s.gaveUp}; not retried`);
      return;
    }
    if (a.status === "unavailable") {
      this.#later(s);
      log.warn({ instance: t.id, err: a.message }, "identity rebind: the bundle is unavailable; asked again later");
      return;
    }
    let image: Uint8Array;
    const nonce = rebindNonce();
    try {
      image = rebindImage(parseRebind(a.secret), nonce);
    } catch (e) {
      if (!(e instanceof RebindMalformed)) throw e;
      s.gaveUp = e.message;
      log.warn({ instance: t.id, reason: e.reason }, `identity rebind: ${e.message}; not retried`);
      return;
    } finally {
      a.secret.fill(0);
    }
    s.tries++;
    let answered = false;
    try {
      answered = await rt.rebind(t.id, image, nonce);
    } catch (e) {
      log.warn(
        { instance: t.id, try: s.tries, err: e instanceof Error ? e.message : String(e) },
        "identity rebind failed",
      );
    } finally {
      image.fill(0);
    }
    if (answered) {
      this.#records![t.id] = t.ref;
      await this.#o.store.save(this.#records!);
      log.info({ instance: t.id, try: s.tries }, "identity rebound");
      return;
    }
    if (s.tries >= REBIND_MAX_TRIES) {
      s.gaveUp = `the guest did not answer ${s.tries} tries`;
      log.warn({ instance: t.id, reason: "rebind-unanswered" }, `identity rebind: ${s.gaveUp}; nothing is reported`);
      return;
    }
    this.#later(s);
    log.info({ instance: t.id, try: s.tries }, "identity rebind: no answer; tried again in 5 minutes");
  }
}
