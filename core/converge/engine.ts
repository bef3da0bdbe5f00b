/**
 * The convergence engine (000 §Convergence and status): sections in order, each an idempotent
 * `plan(desired, observed)` + `apply`; a status per section; `observed_generation` advancing only when every
 * section converged or failed terminally; passes on every new spec and on a drift timer.
 *
 * @module
 */
import type { Logger } from "../log/mod.ts";
import { ConditionSet, type ReportedCondition } from "./conditions.ts";
import type { Clock } from "../clock.ts";
import {
  isEmptySection,
  isTerminal,
  SECTION_FIELD_NUMBER,
  SECTION_ORDER,
  type SectionName,
  type SectionStatus,
  type UnknownSectionName,
} from "./section.ts";
import { settled } from "../settled.ts";

/** What an `apply` (or a plan with nothing to do) comes to. */
export type ApplyOutcome =
  | { readonly kind: "converged"; readonly message?: string }
  /** Retryable: the section stays `PROGRESSING` and is retried on the next pass. */
  | { readonly kind: "progressing"; readonly reason: string; readonly message: string }
  /** Terminal at this generation. */
  | { readonly kind: "failed"; readonly reason: string; readonly message: string }
  /**
   * Terminal and not handled here, e.g. `HostManagedExternally`; `condition: false` raises no
   * `SectionUnsupported` condition.
   */
  | { readonly kind: "unsupported"; readonly reason: string; readonly message: string; readonly condition: boolean };

/** Context handed to `apply`. */
export interface ApplyContext {
  readonly generation: number;
  readonly conditions: ConditionSet;
  readonly log: Logger;
}

/** A section's converger. `plan` must be idempotent: planning a converged section yields no action. */
export interface SectionConverger<D = unknown, O = unknown, A = unknown> {
  readonly section: SectionName;
  /**
   * Reads the host's current state for this section. `desired` is the section the pass then plans (the engine hands
   * it over as held), so that an observation can leave out what no plan of it could use; an observation made
   * without it is complete.
   */
  observe(ctx: ApplyContext, desired?: D): Promise<O>;
  /** The actions that move `observed` to `desired` (`undefined` when the spec leaves the section empty). */
  plan(desired: D | undefined, observed: O): readonly A[];
  /** Carries out the actions. */
  apply(actions: readonly A[], desired: D | undefined, ctx: ApplyContext): Promise<ApplyOutcome>;
}

/** A converger error that is terminal at this generation (an exception of any other type is retryable). */
export class TerminalSectionError extends Error {
  override name = "TerminalSectionError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The spec a pass converges: a generation, its echoed hash, and the sections it sets. */
export interface HeldSpec {
  readonly generation: number;
  readonly specHash: string;
  readonly sections: Readonly<Partial<Record<SectionName, unknown>>>;
  /** NodeSpec field numbers this build does not know, and whether each is empty. */
  readonly unknownSections?: readonly { readonly field: number; readonly empty: boolean }[];
}

/** The content of a `StatusReport`. */
export interface StatusSnapshot {
  readonly observed_generation: number;
  readonly applied_generation: number;
  readonly applied_spec_hash: string;
  readonly sections: readonly SectionStatus[];
  readonly conditions: readonly ReportedCondition[];
}

/** Engine options. */
export interface EngineOptions {
  readonly convergers: readonly SectionConverger[];
  readonly log: Logger;
  readonly clock?: Pick<Clock, "monotonic">;
  readonly conditions?: ConditionSet;
  /** The observed generation held from an earlier process (it never moves backwards). */
  readonly observedGeneration?: number;
}

/** Runs convergence passes and keeps the section statuses. One pass at a time. */
export class ConvergenceEngine {
  readonly conditions: ConditionSet;
  readonly #convergers = new Map<SectionName, SectionConverger>();
  readonly #log: Logger;
  #statuses: SectionStatus[] = [];
  #observed: number;
  #spec: HeldSpec | undefined;
  #running: Promise<StatusSnapshot> | undefined;
  #passes = 0;
  #unknownReported = new Set<string>();
  /**
   * Each section's child logger, kept while the generation and the engine logger's level are those it was made with
   * (a child takes its parent's level when made); a child per section and pass was a cost of every idle pass.
   */
  readonly #logs = new Map<SectionName, { generation: number; level: string; log: Logger }>();
  readonly #clock: Pick<Clock, "monotonic"> | undefined;
  /** Called with each pass's duration in ms on the engine's monotonic clock (telemetry). */
  onPass: ((ms: number) => void) | undefined;

  constructor(opts: EngineOptions) {
    this.#clock = opts.clock;
    for (const c of opts.convergers) {
      if (this.#convergers.has(c.section)) throw new TypeError(`two convergers for section ${c.section}`);
      this.#convergers.set(c.section, c);
    }
    this.#log = opts.log;
    this.conditions = opts.conditions ?? new ConditionSet(opts.clock);
    this.#observed = opts.observedGeneration ?? 0;
  }

  /** The number of passes run so far. */
  get passes(): number {
    return this.#passes;
  }

  /** The spec being converged. */
  get spec(): HeldSpec | undefined {
    return this.#spec;
  }

  /** Sets the spec the next passes converge (a newer spec replaces it). */
  hold(spec: HeldSpec): void {
    this.#spec = spec;
  }

  /** Whether any section is still `PROGRESSING` (the scheduler retries sooner). */
  get progressing(): boolean {
    return this.#statuses.some((s) => s.state === "PROGRESSING");
  }

  /** The current status. */
  snapshot(): StatusSnapshot {
    return {
      observed_generation: this.#observed,
      applied_generation: this.#spec?.generation ?? 0,
      applied_spec_hash: this.#spec?.specHash ?? "",
      sections: [...this.#statuses],
      conditions: this.conditions.report(),
    };
  }

  /** Runs one pass over the held spec; concurrent callers share the pass in flight, then a fresh one runs. */
  async pass(): Promise<StatusSnapshot> {
    while (this.#running) await settled(this.#running);
    const now = () => this.#clock?.monotonic() ?? performance.now();
    const start = now();
    const p = this.#pass();
    this.#running = p;
    try {
      return await p;
    } finally {
      this.#running = undefined;
      this.onPass?.(now() - start);
    }
  }

  async #pass(): Promise<StatusSnapshot> {
    const spec = this.#spec;
    if (!spec) return this.snapshot();
    this.#passes++;
    const gen = spec.generation;
    const statuses: SectionStatus[] = [];
    for (const section of SECTION_ORDER) {
      const desired = spec.sections[section];
      const status = await this.#section(section, desired, gen);
      statuses.push(status);
    }
    statuses.push(...this.#unknownSections(spec.unknownSections ?? [], gen));
    this.#statuses = statuses;
    if (statuses.every((s) => isTerminal(s.state)) && gen > this.#observed) {
      this.#observed = gen;
      this.#log.info({ generation: gen }, "spec observed: every section converged or failed terminally");
    }
    return this.snapshot();
  }

  /**
   * A section number bcd does not know: `UNSUPPORTED` with the field number as its reason and a `SectionUnsupported`
   * condition when it carries anything (terminal, so the rest of the spec still converges); `CONVERGED` when empty.
   * Conditions of unknown sections the spec no longer carries are cleared.
   */
  #unknownSections(unknown: readonly { field: number; empty: boolean }[], generation: number): SectionStatus[] {
    const cond = "SectionUnsupported";
    const now = new Set<string>();
    const out: SectionStatus[] = [];
    for (const u of [...unknown].sort((a, b) => a.field - b.field)) {
      const section = String(u.field) as UnknownSectionName;
      if (now.has(section)) continue;
      now.add(section);
      if (u.empty) {
        this.conditions.clear(cond, section);
        out.push({ section, state: "CONVERGED", generation, reason: "", message: "" });
        continue;
      }
      const message = `NodeSpec field ${u.field} is a section this build of bcd does not know`;
      this.conditions.set(cond, section, "True", section, message);
      out.push({ section, state: "UNSUPPORTED", generation, reason: section, message });
    }
    for (const old of this.#unknownReported) if (!now.has(old)) this.conditions.clear(cond, old);
    this.#unknownReported = now;
    return out;
  }

  #sectionLog(section: SectionName, generation: number): Logger {
    const had = this.#logs.get(section);
    const level = this.#log.level;
    if (had?.generation === generation && had.level === level) return had.log;
    const log = this.#log.child({ section, generation });
    this.#logs.set(section, { generation, level, log });
    return log;
  }

  async #section(section: SectionName, desired: unknown, generation: number): Promise<SectionStatus> {
    const conv = this.#convergers.get(section);
    const cond = "SectionUnsupported";
    if (!conv) {
      if (isEmptySection(desired)) {
        this.conditions.clear(cond, section);
        return { section, state: "CONVERGED", generation, reason: "", message: "" };
      }
      const reason = String(SECTION_FIELD_NUMBER[section]);
      this.conditions.set(cond, section, "True", reason, `bcd has no converger for section ${section}`);
      return { section, state: "UNSUPPORTED", generation, reason, message: `no converger for section ${section}` };
    }
    const log = this.#sectionLog(section, generation);
    const ctx: ApplyContext = { generation, conditions: this.conditions, log };
    let outcome: ApplyOutcome;
    try {
      const observed = await conv.observe(ctx, desired);
      const actions = conv.plan(desired, observed);
      outcome = actions.length === 0 ? { kind: "converged" } : await conv.apply(actions, desired, ctx);
    } catch (e) {
      if (e instanceof TerminalSectionError) {
        outcome = { kind: "failed", reason: e.reason, message: e.message };
      } else {
        const message = e instanceof Error ? e.message : String(e);
        log.warn({ err: message }, "section apply failed; retrying on the next pass");
        outcome = { kind: "progressing", reason: "ApplyError", message };
      }
    }
    if (outcome.kind !== "unsupported" || !outcome.condition) this.conditions.clear(cond, section);
    switch (outcome.kind) {
      case "converged":
        return { section, state: "CONVERGED", generation, reason: "", message: outcome.message ?? "" };
      case "progressing":
        return { section, state: "PROGRESSING", generation, reason: outcome.reason, message: outcome.message };
      case "failed":
        log.warn({ reason: outcome.reason }, outcome.message);
        return { section, state: "FAILED", generation, reason: outcome.reason, message: outcome.message };
      case "unsupported":
        if (outcome.condition) this.conditions.set(cond, section, "True", outcome.reason, outcome.message);
        return { section, state: "UNSUPPORTED", generation, reason: outcome.reason, message: outcome.message };
    }
  }
}
