/**
 * The structured event every migration transition emits, and its JSON line (timestamps as integer nanoseconds,
 * written exactly).
 *
 * @module
 */
import type { Phase, Via } from "./phases.ts";

/** One transition of one migration. */
export interface MigrationEvent {
  readonly event: "migration.transition";
  readonly vm_id: string;
  readonly migration_id: string;
  /** 1 for the first transition of this state machine, then +1 per transition. */
  readonly seq: number;
  readonly from: Phase;
  readonly to: Phase;
  readonly via: Via;
  /** Why an abort or resume happened (`drain-timeout`, ...); `null` on forward steps. */
  readonly reason: string | null;
  /** Integer nanoseconds since the Unix epoch from the injected clock. */
  readonly ts: bigint;
}

/** The event as one JSON line (no newline), `ts` written as an exact integer. */
export function formatMigrationEvent(e: MigrationEvent): string {
  const { ts, ...rest } = e;
  return `${JSON.stringify(rest).slice(0, -1)},"ts":${ts.toString()}}`;
}
