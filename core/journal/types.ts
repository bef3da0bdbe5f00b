/**
 * The journal's typed records (000 §The journal): command entries, outcomes, events, the spec, meta.
 *
 * Results are the journal's envelope around opaque bytes: the journal knows the terminal state, the error code or
 * rejection reason and the producing `boot_id`; the kind's result message travels as `body` bytes that the journal
 * never decodes.
 *
 * @module
 */

/** The flags of a kind that the resolution table reads (a subset of `KindFlags` in core/commands/kinds.ts). */
export interface ResolveFlags {
  /** May run again when a crash interrupted it before it finished. */
  readonly retrySafe: boolean;
  /** The side effect ends the daemon process. */
  readonly selfTerminating: boolean;
}

/** The terminal states a command result can carry (000 §Results and acknowledgements). */
export type TerminalState = "SUCCEEDED" | "FAILED" | "REJECTED" | "CANCELLED";

/** The terminal rejection reasons that are journaled (000 §Acceptance checks); `BUSY` never is. */
export type RejectReason =
  | "UNSUPPORTED"
  | "EXPIRED"
  | "STALE_GENERATION"
  | "BAD_SIGNATURE"
  | "BATCH_UNAPPROVED"
  | "UNBATCHED_LIMIT";

/** Every journaled rejection reason, in the seed's order. */
export const REJECT_REASONS: readonly RejectReason[] = [
  "UNSUPPORTED",
  "EXPIRED",
  "STALE_GENERATION",
  "BAD_SIGNATURE",
  "BATCH_UNAPPROVED",
  "UNBATCHED_LIMIT",
];

/** What a caller hands to {@link Journal.finish}: the outcome of a command, without the producing boot id. */
export interface OutcomeInput {
  readonly state: TerminalState;
  /** `FAILED`: the error code (`interrupted`, `invalid-payload`, `internal`, kind-specific); `REJECTED`: the reason. */
  readonly code?: string;
  /** A human-readable message; never parsed. */
  readonly message?: string;
  /** The kind's result message, encoded by the caller; opaque to the journal. */
  readonly body?: Uint8Array;
}

/** A stored command result: the outcome plus the `boot_id` it was produced in. */
export interface CommandResult extends OutcomeInput {
  readonly bootId: string;
  /** Set on a `SUCCEEDED` result the journal settled because a self-terminating command's reboot completed it. */
  readonly rebooted?: boolean;
  /** With `rebooted`: the boot the command ran in (`NodeRebootResult.previous_boot_id`). */
  readonly previousBootId?: string;
}

/** Fields every command entry has. */
interface EntryBase {
  /** The command id (a ULID): the deduplication key. */
  readonly id: string;
  readonly kind: string;
  readonly retrySafe: boolean;
  readonly selfTerminating: boolean;
  /** The incarnation (process start) that accepted or last wrote the entry. */
  readonly incarnation: string;
  /** When the entry was first written, ms since the epoch (injected clock). */
  readonly createdAt: number;
  /** When the entry last changed. */
  readonly updatedAt: number;
}

/** `accepted`: on disk before any side effect. */
export interface AcceptedEntry extends EntryBase {
  readonly state: "accepted";
}

/** `running{boot_id}`: written immediately before a self-terminating kind's effect (and optionally others'). */
export interface RunningEntry extends EntryBase {
  readonly state: "running";
  readonly bootId: string;
}

/** `done{result, boot_id}`: a terminal result, kept 7 days; replayed until the gateway acks it. */
export interface DoneEntry extends EntryBase {
  readonly state: "done";
  readonly result: CommandResult;
  /** The gateway acknowledged the result (`Ack.command_ids`); it is no longer replayed in `Hello`. */
  readonly resultAcked: boolean;
}

/** A command entry: `accepted` | `running{boot_id}` | `done{result, boot_id}`. */
export type JournalEntry = AcceptedEntry | RunningEntry | DoneEntry;

/** What {@link Journal.accept} needs beyond the id. */
export interface AcceptInput extends ResolveFlags {
  readonly kind: string;
}

/** The three event classes; when the journal is full the oldest `metric` events go first, the others never. */
export type EventClass = "metric" | "transition" | "result";

/** Every event class. */
export const EVENT_CLASSES: readonly EventClass[] = ["metric", "transition", "result"];

/** An unacked event. `seq` increases from 1 per `journal_id`. */
export interface JournalEvent {
  readonly seq: number;
  readonly class: EventClass;
  /** The encoded event; opaque to the journal. */
  readonly payload: Uint8Array;
  readonly createdAt: number;
}

/** The last full spec. */
export interface StoredSpec {
  readonly generation: number;
  readonly bytes: Uint8Array;
  readonly hash: string;
  /** The `desired-state` signature envelope bytes; absent for an unsigned spec. */
  readonly signature?: Uint8Array;
}

/** The `meta` part. */
export interface JournalMeta {
  readonly nodeId: string | null;
  readonly journalId: string;
  /** The last event sequence number assigned (0: none yet). */
  readonly eventSeq: number;
  readonly lastEpoch: number;
  readonly appliedGeneration: number;
  /** The highest server time seen, ms since the epoch (0: none yet). */
  readonly serverTimeMark: number;
  readonly createdAt: number;
}
