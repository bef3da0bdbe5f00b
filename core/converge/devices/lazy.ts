/**
 * The devices converger, loaded on the section's first pass rather than at the daemon's start (issue 24): the
 * converger and what only its passes use (planning, applying, slices, hold environments, admission, the wire
 * mapping: ~60 KB of source) stay out of the start to `Hello`. The GPU kinds (`gpu.reset`, `diag.nvml`,
 * `diag.dcgm`) and the host ports are built at start as before.
 *
 * Until the first pass loads it, it answers what a fresh {@link DevicesConverger} answers before its first pass: no
 * memory committed by bound holds, no hold read. After, everything is the loaded converger's.
 *
 * @module
 */
import type { SectionConverger } from "../engine.ts";
import { lazyConverger } from "../lazy.ts";
import type { DevicesSection } from "./assignment.ts";
import type { DevicesConverger } from "./converger.ts";
import type { DevicesAction, DevicesObserved } from "./plan.ts";
import type { WireDevicesSection } from "./wire.ts";

/** What the agent reads of the devices converger: its passes, and the holds' memory and count as of its last pass. */
export interface DevicesConvergerView
  extends SectionConverger<WireDevicesSection | DevicesSection, DevicesObserved, DevicesAction> {
  boundCommittedBytes(): number;
  heldCount(): number;
}

/** The devices converger that `load` makes on the section's first `observe`. */
export function lazyDevicesConverger(load: () => Promise<DevicesConverger>): DevicesConvergerView {
  let loaded: DevicesConverger | undefined;
  const passes = lazyConverger("devices", async () => loaded = await load());
  return {
    section: passes.section,
    observe: passes.observe,
    plan: passes.plan,
    apply: passes.apply,
    boundCommittedBytes: () => loaded?.boundCommittedBytes() ?? 0,
    heldCount: () => loaded?.heldCount() ?? 0,
  };
}
