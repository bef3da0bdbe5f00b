/**
 * The migration state machine as a typestate: one class per phase, each offering only the transitions the seed
 * allows from it. `go(to)` takes the single forward step and accepts nothing but that phase; `abort` exists only
 * on Intent, Draining and Quiescent; `resumeOnSource` only on Snapshotting, Transferring and Restoring. So
 * snapshotting before quiescence, or aborting once Snapshotting has begun, does not compile.
 *
 * Every transition emits a {@link MigrationEvent}. A state object is good for one transition: once left, using it
 * again throws {@link MigrationTransitionError} with reason `stale-state` (types cannot express linearity).
 *
 * @example
 * const s = startMigrationFsm({ vmId, migrationId: "m-1" });
 * const draining = s.go("Intent").go("Draining");
 * const back = draining.abort("drain-timeout"); // Stable
 *
 * @module
 */
import { wallNanos } from "../clock.ts";
import { MigrationTransitionError } from "./errors.ts";
import type { MigrationEvent } from "./events.ts";
import { isLegalTransition, type NextPhase, type Phase, type Via } from "./phases.ts";

/** Options for {@link startMigrationFsm}. */
export interface MigrationFsmOptions {
  readonly vmId: string;
  readonly migrationId: string;
  /** Integer nanoseconds since the Unix epoch; defaults to the wall clock. */
  readonly now?: () => bigint;
  /** Called once per transition, after the new state is current. */
  readonly onEvent?: (e: MigrationEvent) => void;
}

class _Run {
  seq = 0;
  current: MigrationState<Phase>;
  readonly events: MigrationEvent[] = [];
  constructor(readonly opts: MigrationFsmOptions) {
    this.current = new Stable(this);
  }
}

/** The state object of each phase. */
export interface StateOf {
  Stable: Stable;
  Intent: Intent;
  Draining: Draining;
  Quiescent: Quiescent;
  Snapshotting: Snapshotting;
  Transferring: Transferring;
  Restoring: Restoring;
  CutOver: CutOver;
  Cleanup: Cleanup;
}

/** What every phase's state object has. */
export abstract class MigrationState<P extends Phase> {
  abstract readonly phase: P;
  /** @internal */
  protected readonly _run: _Run;
  /** @internal */
  constructor(run: _Run) {
    this._run = run;
  }

  /** The VM this migration moves. */
  get vmId(): string {
    return this._run.opts.vmId;
  }
  /** The migration's id. */
  get migrationId(): string {
    return this._run.opts.migrationId;
  }
  /** Every event this state machine emitted so far, oldest first. */
  get events(): readonly MigrationEvent[] {
    return this._run.events;
  }
  /** Whether this object is the machine's current state (not yet left). */
  get isCurrent(): boolean {
    return this._run.current === (this as MigrationState<Phase>);
  }

  /** Takes the single forward step; `to` must name it. */
  go<T extends NextPhase[P]>(to: T): StateOf[T] {
    return this._take(to, "advance", null);
  }

  /** @internal */
  protected _take<T extends Phase>(to: T, via: Via, reason: string | null): StateOf[T] {
    const from = this.phase;
    if (!this.isCurrent) {
      throw new MigrationTransitionError(
        "stale-state",
        from,
        to,
        via,
        `${this.migrationId}: ${from} was already left (now ${this._run.current.phase}); ${via} to ${to} refused`,
      );
    }
    if (!isLegalTransition(from, to, via)) {
      throw new MigrationTransitionError("illegal-transition", from, to, via, `${from} → ${to} by ${via}`);
    }
    const next = new _CTORS[to](this._run) as StateOf[T];
    const run = this._run;
    run.current = next;
    const ev: MigrationEvent = {
      event: "migration.transition",
      vm_id: run.opts.vmId,
      migration_id: run.opts.migrationId,
      seq: ++run.seq,
      from,
      to,
      via,
      reason,
      ts: run.opts.now ? run.opts.now() : wallNanos(),
    };
    run.events.push(ev);
    run.opts.onEvent?.(ev);
    return next;
  }
}

/** No migration in progress; the VM runs where it is. */
export class Stable extends MigrationState<"Stable"> {
  readonly phase = "Stable" as const;
}
/** A migration is decided; nothing touched yet. */
export class Intent extends MigrationState<"Intent"> {
  readonly phase = "Intent" as const;
  /** Gives up before draining; back to Stable on the source. */
  abort(reason: string): Stable {
    return this._take("Stable", "abort", reason);
  }
}
/** DrainRequest sent; waiting for the guest to be quiescent. */
export class Draining extends MigrationState<"Draining"> {
  readonly phase = "Draining" as const;
  /** Gives up (deadline passed, turn in flight too long): DrainCancel, back to Stable on the source. */
  abort(reason: string): Stable {
    return this._take("Stable", "abort", reason);
  }
}
/** Gate closed, no turn running. */
export class Quiescent extends MigrationState<"Quiescent"> {
  readonly phase = "Quiescent" as const;
  /** Gives up before the snapshot; back to Stable on the source. */
  abort(reason: string): Stable {
    return this._take("Stable", "abort", reason);
  }
}
/** The snapshot is being taken; from here on there is no abort. */
export class Snapshotting extends MigrationState<"Snapshotting"> {
  readonly phase = "Snapshotting" as const;
  /** Fails over: the VM resumes on the source host. */
  resumeOnSource(reason: string): Stable {
    return this._take("Stable", "resume-on-source", reason);
  }
}
/** The snapshot travels to the target host. */
export class Transferring extends MigrationState<"Transferring"> {
  readonly phase = "Transferring" as const;
  /** Fails over: the VM resumes on the source host. */
  resumeOnSource(reason: string): Stable {
    return this._take("Stable", "resume-on-source", reason);
  }
}
/** The target host restores the snapshot. */
export class Restoring extends MigrationState<"Restoring"> {
  readonly phase = "Restoring" as const;
  /** Fails over: the VM resumes on the source host. */
  resumeOnSource(reason: string): Stable {
    return this._take("Stable", "resume-on-source", reason);
  }
}
/** The target is the VM now. */
export class CutOver extends MigrationState<"CutOver"> {
  readonly phase = "CutOver" as const;
}
/** The source's leftovers (snapshot directory included) are deleted. */
export class Cleanup extends MigrationState<"Cleanup"> {
  readonly phase = "Cleanup" as const;
}

const _CTORS: { readonly [K in Phase]: new (run: _Run) => StateOf[K] } = {
  Stable,
  Intent,
  Draining,
  Quiescent,
  Snapshotting,
  Transferring,
  Restoring,
  CutOver,
  Cleanup,
};

/** Any phase's state object. */
export type AnyMigrationState = StateOf[Phase];

/** A new state machine for one migration of one VM, in Stable. */
export function startMigrationFsm(opts: MigrationFsmOptions): Stable {
  return new _Run(opts).current as Stable;
}
