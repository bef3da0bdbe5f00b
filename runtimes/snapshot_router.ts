/**
 * `instance.snapshot` on a host with more than one runtime: each command goes to the snapshot taker of the runtime
 * that holds the instance (asked in order), and a staged snapshot goes back to the taker of the runtime that made it.
 * An instance no runtime holds is refused `no-instance`.
 *
 * @module
 */
import {
  type InstanceSnapshotter,
  SnapshotRefused,
  type StagedSnapshot,
} from "../core/commands/kind_handlers/instance_snapshot.ts";

/** One runtime's taker, and whether it holds an instance. */
export interface RoutedSnapshotter {
  readonly runtime: string;
  readonly holds: (id: string) => Promise<boolean>;
  readonly snapshotter: InstanceSnapshotter;
}

/** The router. */
export class SnapshotRouter implements InstanceSnapshotter {
  constructor(readonly routes: readonly RoutedSnapshotter[]) {}

  async take(id: string, includeMemory: boolean, tag: string, signal: AbortSignal): Promise<StagedSnapshot> {
    for (const r of this.routes) {
      if (await r.holds(id)) return await r.snapshotter.take(id, includeMemory, tag, signal);
    }
    throw new SnapshotRefused("no-instance", `no instance ${id} on this host`);
  }

  async discard(staged: StagedSnapshot): Promise<void> {
    const r = this.routes.find((x) => x.runtime === staged.runtime);
    if (!r) throw new RangeError(`no snapshot taker for runtime ${staged.runtime}`);
    await r.snapshotter.discard(staged);
  }
}
