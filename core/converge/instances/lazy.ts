/**
 * The instances converger of a node without a built-in runtime (no virsh and no cloud-hypervisor: a GPU host that
 * runs no VM, or one with runtime plugins only), loaded on the section's first pass rather than at the daemon's start
 * (issue 24): `converger.ts` and its parts (admission, volumes, rebind, snapshots, user data: 14 modules, ~80 KB of
 * source) stay out of such a node's start. A node with a runtime loads them with the runtimes' wiring anyway.
 *
 * Until the first pass loads it, it answers what a fresh {@link InstancesConverger} over the same runtimes answers
 * before its first pass: no instance listed (the listing complete only with no runtime at all, since each runtime is
 * "not listed yet"), no GPU passed through, no memory committed. After, everything is the loaded converger's.
 *
 * @module
 */
import type { bcd } from "../../../proto/mod.ts";
import type { PassthroughGpu } from "../devices/conflicts.ts";
import type { SectionConverger } from "../engine.ts";
import { lazyConverger } from "../lazy.ts";
import type { InstanceAction, InstanceListing, InstancesConverger, ObservedDomain } from "./converger.ts";

/** What the agent reads of an instances converger: its passes, the runtimes `Hello` names, its report, and the
 * devices side's view (the GPUs it passes through, the memory its domains committed). */
export interface InstancesConvergerView
  extends SectionConverger<bcd.v1.InstancesSection.$Properties, ObservedDomain[], InstanceAction> {
  readonly runtimeNames: readonly string[];
  listing(): InstanceListing;
  passthrough(): PassthroughGpu[];
  committedBytes(): number;
}

/**
 * An instances converger over runtimes named `runtimeNames` that `load` makes on the section's first `observe`; `load`
 * must make one over runtimes of those names (a load that does not fails that pass, as a failed load does).
 */
export function lazyInstancesConverger(
  runtimeNames: readonly string[],
  load: () => Promise<InstancesConverger>,
): InstancesConvergerView {
  let loaded: InstancesConverger | undefined;
  const passes = lazyConverger("instances", async () => {
    const c = await load();
    if (c.runtimeNames.join("\n") !== runtimeNames.join("\n")) {
      throw new Error(`the instances converger loaded over [${c.runtimeNames}], not [${runtimeNames}]`);
    }
    return loaded = c;
  });
  return {
    section: passes.section,
    observe: passes.observe,
    plan: passes.plan,
    apply: passes.apply,
    runtimeNames,
    listing: () => loaded?.listing() ?? { instances: [], complete: runtimeNames.length === 0 },
    passthrough: () => loaded?.passthrough() ?? [],
    committedBytes: () => loaded?.committedBytes() ?? 0,
  };
}
