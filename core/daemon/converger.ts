/**
 * The `daemon` section's converger (000 §NodeSpec `daemon`: version, URL, SHA-256, signature): converged when this
 * process runs the section's version; otherwise one {@link upgradeStep} per pass, `PROGRESSING` (`Upgrading`) while
 * the release downloads, swaps and restarts, `FAILED` with the refusal's reason (`bad-digest`, `BAD_SIGNATURE`,
 * `rolled-back`, …) terminally at this generation. An empty section asks for nothing.
 *
 * @module
 */
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../converge/engine.ts";
import { isEmptySection } from "../converge/section.ts";
import { ReleaseRefused, type ReleaseTarget, RETRYABLE_REASONS } from "./release.ts";
import { type UpgradeDeps, upgradeStep } from "./upgrade.ts";

/** The section as decoded from the spec. */
export interface DaemonSectionValue {
  readonly version?: string;
  readonly url?: string;
  readonly sha256?: string;
  readonly signature?: Uint8Array;
}

/** The section's target, or `undefined` when it asks for nothing. */
export function daemonTarget(d: DaemonSectionValue | undefined): ReleaseTarget | undefined {
  if (d === undefined || isEmptySection(d)) return undefined;
  return {
    version: d.version ?? "",
    url: d.url ?? "",
    sha256: d.sha256 ?? "",
    signature: d.signature ?? new Uint8Array(),
  };
}

/** The converger. */
export class DaemonConverger implements SectionConverger<DaemonSectionValue, string, ReleaseTarget> {
  readonly section = "daemon" as const;
  constructor(private readonly deps: UpgradeDeps) {}

  observe(_ctx: ApplyContext): Promise<string> {
    return Promise.resolve(this.deps.running);
  }

  plan(desired: DaemonSectionValue | undefined, running: string): readonly ReleaseTarget[] {
    const t = daemonTarget(desired);
    return t === undefined || t.version === running ? [] : [t];
  }

  async apply(actions: readonly ReleaseTarget[], _desired: unknown, ctx: ApplyContext): Promise<ApplyOutcome> {
    const t = actions[0];
    if (t === undefined) return { kind: "converged" };
    try {
      const step = await upgradeStep(t, this.deps);
      if (step.kind === "current") return { kind: "converged" };
      ctx.log.info({ version: t.version, step: step.kind }, "daemon: upgrading");
      return {
        kind: "progressing",
        reason: "Upgrading",
        message: step.kind === "pending"
          ? `release ${t.version} is swapped in; waiting for its process to reach Welcome`
          : `release ${t.version} installed; the helper restarts the agent`,
      };
    } catch (e) {
      if (!(e instanceof ReleaseRefused)) throw e;
      if (RETRYABLE_REASONS.has(e.reason)) return { kind: "progressing", reason: e.reason, message: e.message };
      ctx.log.warn({ version: t.version, reason: e.reason, err: e.message }, "daemon: release refused");
      return { kind: "failed", reason: e.reason, message: e.message };
    }
  }
}
