/**
 * A section's converger whose code loads on the section's first pass, not at the daemon's start (issue 24): a node
 * loads the host units' code, for instance, only when a pass reaches the `host` section. The engine observes a
 * section before it plans and applies it (`engine.ts`), so the first `observe` loads the converger and the rest
 * delegate to it. A load that fails fails that pass's `observe`, a retryable error, and the next pass loads again.
 *
 * @module
 */
import type { SectionConverger } from "./engine.ts";
import type { SectionName } from "./section.ts";

/** A converger of `section` that `load` makes on its first `observe`; `load` must make one of the same section. */
export function lazyConverger<D, O, A>(
  section: SectionName,
  load: () => Promise<SectionConverger<D, O, A>>,
): SectionConverger<D, O, A> {
  let loading: Promise<SectionConverger<D, O, A>> | undefined;
  let loaded: SectionConverger<D, O, A> | undefined;
  const ready = (): SectionConverger<D, O, A> => {
    if (loaded === undefined) throw new Error(`the ${section} converger was used before its first observe loaded it`);
    return loaded;
  };
  return {
    section,
    async observe(ctx, desired) {
      if (loaded === undefined) {
        loading ??= load().then((c) => {
          if (c.section !== section) throw new Error(`the ${section} converger loaded the ${c.section} section's`);
          return c;
        });
        try {
          loaded = await loading;
        } catch (e) {
          loading = undefined;
          throw e;
        }
      }
      return loaded.observe(ctx, desired);
    },
    plan: (desired, observed) => ready().plan(desired, observed),
    apply: (actions, desired, ctx) => ready().apply(actions, desired, ctx),
  };
}
