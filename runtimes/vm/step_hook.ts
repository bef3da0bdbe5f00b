/**
 * The launch's step hook (seed 002 §The step hook): `RUNTIME_ADAPTER_STEP_HOOK=STEP:pause:PATH` creates PATH, holding
 * the step's name, and waits until the file is gone; `STEP:exit` exits the launch at once with status 5, unwinding
 * nothing (the VMM it spawned runs on; the system releases its descriptors and their claims). The steps, in order:
 * `checked`, `spawned`, `ready`, `commit`. A value that names no step or action is a usage error; without the
 * variable the hook does nothing.
 *
 * @module
 */

/** The variable the launch reads its hook from (the seed's name). */
export const STEP_HOOK_VAR = "RUNTIME_ADAPTER_STEP_HOOK";

/** The steps of a launch, in order. */
export const STEPS = ["checked", "spawned", "ready", "commit"] as const;
export type Step = typeof STEPS[number];

/** The status a launch that the hook ended exits with. */
export const HOOK_EXIT_STATUS = 5;

/** A hook value that names no step or action (exit 2). */
export class StepHookUsage extends Error {
  override name = "StepHookUsage";
}

/** A parsed hook. */
export type StepHookSpec =
  | { readonly step: Step; readonly action: "exit" }
  | { readonly step: Step; readonly action: "pause"; readonly path: string };

/** Parses the variable's value; `undefined` (unset) is no hook. The path may hold colons. */
export function parseStepHook(value: string | undefined): StepHookSpec | null {
  if (value === undefined) return null;
  const first = value.indexOf(":");
  const step = value.slice(0, first);
  if (first < 0 || !(STEPS as readonly string[]).includes(step)) {
    throw new StepHookUsage(`${STEP_HOOK_VAR}=${JSON.stringify(value)} names no step (${STEPS.join(", ")})`);
  }
  const rest = value.slice(first + 1);
  if (rest === "exit") return { step: step as Step, action: "exit" };
  if (rest.startsWith("pause:") && rest.length > "pause:".length) {
    return { step: step as Step, action: "pause", path: rest.slice("pause:".length) };
  }
  throw new StepHookUsage(`${STEP_HOOK_VAR}=${JSON.stringify(value)} names no action (exit, or pause:PATH)`);
}

/** What the hook does at a step, injected so tests see it without exiting or waiting. */
export interface StepHookEffects {
  exit(status: number): never;
  /** Resolves once `path` is gone. */
  waitGone(path: string): Promise<void>;
}

async function _waitGone(path: string): Promise<void> {
  for (;;) {
    try {
      await Deno.lstat(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

const REAL: StepHookEffects = { exit: (s) => Deno.exit(s), waitGone: _waitGone };

/** The hook of one launch. `at(step)` returns how long it paused there, in milliseconds (0 elsewhere). */
export class StepHook {
  constructor(readonly spec: StepHookSpec | null, readonly effects: StepHookEffects = REAL) {}

  /** The hook from the environment (throws {@link StepHookUsage}). */
  static fromEnv(): StepHook {
    return new StepHook(parseStepHook(Deno.env.get(STEP_HOOK_VAR)));
  }

  async at(step: Step): Promise<number> {
    const s = this.spec;
    if (s === null || s.step !== step) return 0;
    if (s.action === "exit") this.effects.exit(HOOK_EXIT_STATUS);
    const t0 = performance.now();
    // createNew: a file that is there already fails the pause rather than being taken for this one.
    await Deno.writeTextFile((s as { path: string }).path, step, { createNew: true });
    await this.effects.waitGone((s as { path: string }).path);
    return performance.now() - t0;
  }
}
