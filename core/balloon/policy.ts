/**
 * The ballooning policy (000 §Memory ballooning), a pure function of the host's readings and the guests' balloons.
 * The seed's table, in its order:
 *
 * | Host state | What bcd does |
 * | --- | --- |
 * | Less than 10% of memory available, or a memory stall of 10% or more | Inflates balloons to cover the shortfall below 10% (at least 2% of host memory while stalled), taking first from the guests with the most memory above their floor, at most a quarter of a guest's memory per pass |
 * | More than 20% available and no stall | Deflates every inflated balloon a step (a quarter of the guest's memory) at a time, within what is free above 20% |
 * | In between | Leaves the balloons as they are |
 *
 * A guest never goes below its floor: `[instances] balloon_floor_percent` of its memory, or what it uses plus 10% of
 * its memory when that is higher; a guest without a usage reading counts as using all its memory, so nothing is
 * taken from it.
 *
 * Judgement calls the seed leaves open, written down: sizes move in whole 4 KiB pages, a take rounded down and a floor
 * rounded up, so a target never crosses its floor. The page is the virtio-balloon's own unit on both runtimes (QEMU and
 * cloud-hypervisor count `num_pages` and drop a remainder), so a target between pages would leave the guest up to a
 * page more than asked, and a guest sitting there just above its floor would be "inflated" by the remainder again on
 * every pass; in whole pages a guest at its floor is left alone. Deflation goes to the most inflated guest
 * first (ties by id) and a step shrinks to what is left of the budget above 20%; a host without PSI
 * (`/proc/pressure/memory` absent, `someAvg10` null) is never "stalled", so the table runs on `MemAvailable` alone.
 *
 * @module
 */

/** The host's readings of one pass. */
export interface HostPressure {
  readonly memTotalBytes: number;
  readonly memAvailableBytes: number;
  /** PSI `some avg10` of `/proc/pressure/memory` (percent), `null` on a host without PSI. */
  readonly someAvg10: number | null;
}

/** A running guest whose spec asks for a balloon, with its balloon's reading. */
export interface BalloonGuest {
  readonly id: string;
  /** Its configured memory (what admission charges). */
  readonly memoryBytes: number;
  /** What the balloon leaves it now (`balloon.current`). */
  readonly currentBytes: number;
  /** What it uses, from the runtime's usage reading; `null` without one (counted as all its memory). */
  readonly usedBytes: number | null;
}

/** A balloon resize: the guest's new size. */
export interface BalloonStep {
  readonly id: string;
  readonly fromBytes: number;
  readonly toBytes: number;
}

/** Which row of the table the host is in. */
export type HostState = "pressure" | "relaxed" | "between";

/** What a pass decides. */
export interface BalloonDecision {
  readonly state: HostState;
  /** Bytes to reclaim (pressure) or that may be handed back (relaxed); 0 in between. */
  readonly budgetBytes: number;
  readonly steps: readonly BalloonStep[];
}

/** Below this share of `MemTotal` available, balloons inflate. */
export const LOW_AVAILABLE = 0.10;
/** Above this share available (and no stall), balloons deflate. */
export const HIGH_AVAILABLE = 0.20;
/** PSI `some avg10` at or above this (percent) is a stall. */
export const STALL_PERCENT = 10;
/** While stalled, at least this share of host memory is reclaimed. */
export const STALL_RECLAIM = 0.02;
/** A pass moves a balloon by at most this share of the guest's memory. */
export const STEP_SHARE = 0.25;
/** A guest's floor is at least what it uses plus this share of its memory. */
export const USE_MARGIN = 0.10;

/** The unit balloon sizes move in: a virtio-balloon page. */
export const BALLOON_PAGE_BYTES = 4096;
const _down = (b: number) => Math.floor(b / BALLOON_PAGE_BYTES) * BALLOON_PAGE_BYTES;
const _up = (b: number) => Math.ceil(b / BALLOON_PAGE_BYTES) * BALLOON_PAGE_BYTES;

/** The size a guest's balloon never takes it below. */
export function balloonFloorBytes(g: Pick<BalloonGuest, "memoryBytes" | "usedBytes">, floorPercent: number): number {
  const byPercent = g.memoryBytes * floorPercent / 100;
  const byUse = g.usedBytes === null ? g.memoryBytes : g.usedBytes + g.memoryBytes * USE_MARGIN;
  return Math.min(g.memoryBytes, _up(Math.max(byPercent, byUse)));
}

/** The table's row for `host`. */
export function hostState(host: HostPressure): HostState {
  const stalled = host.someAvg10 !== null && host.someAvg10 >= STALL_PERCENT;
  if (host.memAvailableBytes < host.memTotalBytes * LOW_AVAILABLE || stalled) return "pressure";
  if (host.memAvailableBytes > host.memTotalBytes * HIGH_AVAILABLE) return "relaxed";
  return "between";
}

/**
 * The resizes of one pass. `floorPercent` is `[instances] balloon_floor_percent` (10 to 100). Each guest appears at
 * most once in the result, and only when its size changes.
 */
export function balloonSteps(
  host: HostPressure,
  guests: readonly BalloonGuest[],
  floorPercent: number,
): BalloonDecision {
  const state = hostState(host);
  if (state === "pressure") {
    const stalled = host.someAvg10 !== null && host.someAvg10 >= STALL_PERCENT;
    const shortfall = Math.max(0, host.memTotalBytes * LOW_AVAILABLE - host.memAvailableBytes);
    let need = Math.max(shortfall, stalled ? host.memTotalBytes * STALL_RECLAIM : 0);
    const budgetBytes = need;
    const room = guests.map((g) => {
      const current = Math.min(g.currentBytes, g.memoryBytes);
      return { g, current, above: Math.max(0, current - balloonFloorBytes(g, floorPercent)) };
    }).sort((a, b) => b.above - a.above || (a.g.id < b.g.id ? -1 : a.g.id > b.g.id ? 1 : 0));
    const steps: BalloonStep[] = [];
    for (const r of room) {
      if (need <= 0) break;
      const take = _down(Math.min(r.above, r.g.memoryBytes * STEP_SHARE, _up(need)));
      if (take <= 0) continue;
      steps.push({ id: r.g.id, fromBytes: r.g.currentBytes, toBytes: _down(r.current - take) });
      need -= take;
    }
    return { state, budgetBytes, steps };
  }
  if (state === "relaxed") {
    let budget = host.memAvailableBytes - host.memTotalBytes * HIGH_AVAILABLE;
    const budgetBytes = budget;
    const inflated = guests.filter((g) => g.currentBytes < g.memoryBytes)
      .sort((a, b) =>
        (b.memoryBytes - b.currentBytes) - (a.memoryBytes - a.currentBytes) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
      );
    const steps: BalloonStep[] = [];
    for (const g of inflated) {
      if (budget <= 0) break;
      const give = _down(Math.min(g.memoryBytes * STEP_SHARE, g.memoryBytes - g.currentBytes, budget));
      if (give <= 0) continue;
      steps.push({ id: g.id, fromBytes: g.currentBytes, toBytes: _down(g.currentBytes + give) });
      budget -= give;
    }
    return { state, budgetBytes, steps };
  }
  return { state, budgetBytes: 0, steps: [] };
}
