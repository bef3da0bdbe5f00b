/**
 * Where each of bcd's own metrics is read in a running agent (`core/telemetry/metrics.ts` names them): the
 * dispatcher's settled counts and lanes, the engine's section statuses, the journal's files and unacked events, the
 * devices converger's holds, the instances converger's listing and the moves in progress, the session client's sessions.
 *
 * @module
 */
import { join } from "../core/util/path.ts";
import type { TelemetrySources } from "../core/telemetry/metrics.ts";
import type { Journal } from "../core/journal/mod.ts";
import type { NodeAgent } from "../core/session/node_agent.ts";
import type { DevicesConvergerView } from "../core/converge/devices/lazy.ts";
import type { InstancesConvergerView } from "../core/converge/instances/lazy.ts";

async function _size(path: string): Promise<number> {
  try {
    return (await Deno.stat(path)).size;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return 0;
    throw e;
  }
}

/** The sources; `agent` is read late (the telemetry converger is built before the agent starts). */
export function telemetrySources(
  dataDir: string,
  journal: Journal,
  agent: () => NodeAgent | undefined,
  late: { readonly devices?: DevicesConvergerView },
  instances:
    | {
      readonly converger: InstancesConvergerView;
      readonly migrations?: () => readonly { instance: string; gauge: number }[];
      readonly balloons?: () => readonly { instance: string; bytes: number }[];
    }
    | undefined,
): Omit<TelemetrySources, "dropped"> {
  return {
    settled: () => agent()?.dispatcher.settledCounts ?? new Map(),
    lanes: () =>
      Object.values(agent()?.dispatcher.lanes ?? {}).map((l) => ({
        lane: l.lane,
        running: l.running,
        freeCredits: l.freeCredits,
        queued: Math.max(0, l.limits.credits - l.freeCredits - l.running),
      })),
    sections: () => (agent()?.engine.snapshot().sections ?? []).map((s) => ({ section: s.section, state: s.state })),
    journal: async () => {
      const t = await journal.eventTotals();
      const size = (await _size(join(dataDir, "journal.db"))) + (await _size(join(dataDir, "journal.db-wal")));
      return {
        sizeBytes: size,
        unacked: { metric: t.metric.count, transition: t.transition.count, result: t.result.count },
      };
    },
    holds: () => late.devices?.heldCount() ?? 0,
    ...(instances ? { instances: () => instances.converger.listing().instances } : {}),
    ...(instances?.migrations ? { migrations: instances.migrations } : {}),
    ...(instances?.balloons ? { balloons: instances.balloons } : {}),
    sessions: () => agent()?.session?.sessions ?? 0,
  };
}
