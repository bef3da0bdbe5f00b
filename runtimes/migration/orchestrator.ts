/**
 * The migration orchestrator (seed 001 §Migration state machine, issue 21): drives one running instance through
 * every phase of the typestate in `core/migration/` over two ports, the host's ({@link MigrationHost}: snapshot with
 * memory, transfer, restore as the target, resume on the source, cleanup) and the guest's turn channels
 * ({@link GuestChannels}):
 *
 * 1. Intent → Draining → Quiescent through the source's authenticated channel (`TurnsClient.drain`): a missed
 *    deadline or a turn in flight too long sends DrainCancel and aborts to Stable with the reason; the source never
 *    stopped.
 * 2. Snapshotting (`snapshot()`: the guest's memory to a 0700 directory; the source stops) → Transferring →
 *    Restoring (`restoreTarget()`, then the target channel proving the next restore epoch: only a guest that was
 *    really restored, drained, answers `Resumed`, sets its clock from the host's and replays its queued turns).
 * 3. Any failure from Snapshotting up to the target's `Resumed` resumes on the source: DrainCancel on the source's
 *    channel when the snapshot was not taken (the source still runs), else the target is discarded, the snapshot is
 *    restored into the source and its channel proves the next epoch (the same `Resumed` path). No abort exists there.
 * 4. CutOver → Cleanup (`cleanup()`: the snapshot directory, holding guest memory and so any secret, and the
 *    source's definition) → Stable. A cleanup failure is recorded; the VM runs on the target regardless.
 *
 * The result carries the transcript: every transition event (the JSON events of the typestate) and one step per host
 * or guest action with its outcome. `onPhase` sees every phase as it is entered, for a `/metrics` gauge
 * (`phaseGauge`): the node's `bcd.instance.migration.phase` (`phase_board.ts`, `core/telemetry/metrics.ts`).
 *
 * Over virtio-serial a guest sees no connections, only its port's host side going away and coming back: a guest
 * saved while its port looked connected may take the restoring host for the old, authenticated connection and never
 * greet it. The host port's `snapshot()` therefore hangs up the source's channel and waits for the guest to notice
 * before it saves (the real-VM suite's port does; bcd's libvirt port must, once the helper's `libvirt.save` lands).
 * Over TCP every connection is new to the guest.
 *
 * Timers are the client's (injected), so tests never sleep.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { type MigrationEvent, type Phase, phaseGauge, type Stable } from "../../core/migration/mod.ts";
import type { TurnsClient } from "../guest/turns_client.ts";

/** The host's side of a move. Each method throws on failure; the orchestrator decides what follows. */
export interface MigrationHost {
  /** Saves the running source with its memory into a 0700 snapshot directory; the source stops. */
  snapshot(): Promise<void>;
  /** Moves the snapshot to the target (on one host: nothing to move). */
  transfer(): Promise<void>;
  /** Restores the snapshot as the target, running. */
  restoreTarget(): Promise<void>;
  /** Stops and removes a target that failed before its guest resumed (best effort). */
  discardTarget(): Promise<void>;
  /** Restores the snapshot into the source (it was stopped by the snapshot), running. */
  restoreSource(): Promise<void>;
  /** Deletes the snapshot directory and the source's definition. */
  cleanup(): Promise<void>;
}

/** The guest's turn channels: the target's and the source's after a restore, both proving the next epoch. */
export interface GuestChannels {
  /** Connects to the restored target with `restore: true`; resolves once `Resumed` came. */
  target(): Promise<TurnsClient>;
  /** Connects to the source restored from the snapshot with `restore: true`. */
  sourceRestored(): Promise<TurnsClient>;
}

/** Options of {@link migrate}. */
export interface MigrateOptions {
  readonly migrationId: string;
  /** The source's authenticated turn channel (its FSM is used for the transcript). */
  readonly source: TurnsClient;
  readonly host: MigrationHost;
  readonly channels: GuestChannels;
  /** How long the guest may take to be quiescent (DrainRequest's deadline_ms). */
  readonly drainDeadlineMs: number;
  readonly log: Logger;
  /** Called with each phase as it is entered and its gauge value. */
  readonly onPhase?: (phase: Phase, gauge: number) => void;
}

/** One host or guest action of the move. */
export interface MigrationStep {
  readonly phase: Phase;
  readonly action: string;
  readonly ok: boolean;
  readonly detail?: string;
}

/** How the move ended. */
export type MigrationOutcome =
  /** The VM runs on the target; the source is cleaned up. */
  | "migrated"
  /** Aborted before Snapshotting (drain deadline, in-flight turn, lost channel): the source never stopped. */
  | "aborted"
  /** A failure after Snapshotting began: the VM runs on the source again. */
  | "resumed-on-source"
  /** Resuming on the source failed too: the VM runs nowhere; an operator must act. */
  | "failed";

/** The result, with the transcript. */
export interface MigrationResult {
  readonly outcome: MigrationOutcome;
  readonly reason: string | null;
  readonly events: readonly MigrationEvent[];
  readonly steps: readonly MigrationStep[];
  /** The channel the VM answers on now: the target's, the source's after a restore, or the source's. */
  readonly channel: TurnsClient | null;
  /** Whether cleanup left something behind (recorded in the steps). */
  readonly cleanupFailed: boolean;
}

const _msg = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Moves the instance; never throws for a failure of the move itself (see the outcome). */
export async function migrate(o: MigrateOptions): Promise<MigrationResult> {
  const steps: MigrationStep[] = [];
  const phase = (p: Phase) => o.onPhase?.(p, phaseGauge(p));
  const first = o.source.events.length;
  const events = () => o.source.events.slice(first);
  const done = (
    outcome: MigrationOutcome,
    reason: string | null,
    channel: TurnsClient | null,
    cleanupFailed = false,
  ) => {
    phase("Stable");
    const r: MigrationResult = { outcome, reason, events: events(), steps, channel, cleanupFailed };
    o.log.info({ event: "migration_done", migration_id: o.migrationId, outcome, reason }, "migration ended");
    return r;
  };
  const step = async (p: Phase, action: string, fn: () => Promise<unknown>): Promise<unknown> => {
    try {
      const v = await fn();
      steps.push({ phase: p, action, ok: true });
      return v;
    } catch (e) {
      steps.push({ phase: p, action, ok: false, detail: _msg(e) });
      throw e;
    }
  };

  phase("Draining");
  const drained = await o.source.drain(o.migrationId, o.drainDeadlineMs);
  steps.push({ phase: "Draining", action: "drain", ok: drained.result === "quiescent" });
  if (drained.result === "aborted") return done("aborted", drained.reason, o.source);
  phase("Quiescent");

  const snap = drained.state.go("Snapshotting");
  phase("Snapshotting");
  try {
    await step("Snapshotting", "snapshot", () => o.host.snapshot());
  } catch (e) {
    // The snapshot was not taken: the source still runs with its gate closed; reopen it.
    const reason = `snapshot-failed: ${_msg(e)}`;
    try {
      await step("Snapshotting", "drain-cancel", () => o.source.send({ type: "DrainCancel" }));
    } catch (e2) {
      snap.resumeOnSource(reason);
      return done("failed", `${reason}; DrainCancel failed: ${_msg(e2)}`, null);
    }
    snap.resumeOnSource(reason);
    return done("resumed-on-source", reason, o.source);
  }

  // From here the source is stopped; a failure restores the snapshot into it.
  const backToSource = async (from: { resumeOnSource(r: string): Stable }, reason: string, targetStarted: boolean) => {
    if (targetStarted) {
      await step(phaseOf(from), "discard-target", () => o.host.discardTarget()).catch((e) =>
        o.log.warn({ event: "discard_target_failed", err: _msg(e) }, "target not discarded")
      );
    }
    try {
      await step(phaseOf(from), "restore-source", () => o.host.restoreSource());
      const ch = await step(phaseOf(from), "source-resumed", () => o.channels.sourceRestored()) as TurnsClient;
      from.resumeOnSource(reason);
      return done("resumed-on-source", reason, ch);
    } catch (e2) {
      from.resumeOnSource(reason);
      return done("failed", `${reason}; resume on source failed: ${_msg(e2)}`, null);
    }
  };

  const tr = snap.go("Transferring");
  phase("Transferring");
  try {
    await step("Transferring", "transfer", () => o.host.transfer());
  } catch (e) {
    return await backToSource(tr, `transfer-failed: ${_msg(e)}`, false);
  }

  const rs = tr.go("Restoring");
  phase("Restoring");
  let started = false;
  let target: TurnsClient;
  try {
    await step("Restoring", "restore-target", () => o.host.restoreTarget());
    started = true;
    target = await step("Restoring", "target-resumed", () => o.channels.target()) as TurnsClient;
  } catch (e) {
    return await backToSource(rs, `restore-failed: ${_msg(e)}`, started);
  }

  const co = rs.go("CutOver");
  phase("CutOver");
  o.source.close(); // the source's channel died with its VM
  const cl = co.go("Cleanup");
  phase("Cleanup");
  let cleanupFailed = false;
  try {
    await step("Cleanup", "cleanup", () => o.host.cleanup());
  } catch (e) {
    cleanupFailed = true;
    o.log.error({ event: "migration_cleanup_failed", err: _msg(e) }, "cleanup left the source's leftovers");
  }
  cl.go("Stable");
  return done("migrated", null, target, cleanupFailed);
}

function phaseOf(s: { resumeOnSource(r: string): Stable }): Phase {
  return (s as unknown as { phase: Phase }).phase;
}
