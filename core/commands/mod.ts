/**
 * Commands (000 §Commands): one-shot actions delivered at least once and run at most once.
 *
 * - {@link Dispatcher}: a delivered command goes through the journal's duplicate rules, the acceptance checks in the
 *   seed's order ({@link runAcceptanceChecks}: `UNSUPPORTED` → `min_generation` (defer, `STALE_GENERATION`) →
 *   `EXPIRED` → `BAD_SIGNATURE` → `BATCH_UNAPPROVED` / `UNBATCHED_LIMIT` → `BUSY`), is journaled `accepted` and
 *   reported `ACKED`, runs on its lane's fixed worker pool with its resource locks, and ends with one journaled
 *   terminal result (replayed until acked). Cancel follows the seed: queued or deferred → `CANCELLED`, started →
 *   its real outcome.
 * - Lanes ({@link LANE_LIMITS}): `control` 8 credits / 4 workers, `provision` 4 / 2, `bulk` 2 / 1;
 *   {@link ResourceLocks} keep two lanes off one GPU, disk or allocation.
 * - The kinds table ({@link KINDS}) and the handlers a build implements ({@link HandlerRegistry};
 *   `kind_handlers/` holds `inventory.refresh`, `logs.collect`, `node.reboot`).
 * - The wire edge ({@link incomingFromWire}, {@link updateToWire}).
 *
 * Interpretations (seed silent or ambiguous): the lane, the flags and whether a signature is required come from the
 * kinds table, never from the body's `lane`/`retry_safe`/`attested` fields; a command behind on `min_generation`
 * with no `not_after` is `EXPIRED`, one behind whose `not_after` has passed is `STALE_GENERATION`; a deferred command
 * holds no credit and at most 64 wait at once (beyond: `BUSY`); a cancelled deferred command is journaled `CANCELLED`
 * (`journal.cancel` of an id with no entry yet) so a redelivery gets the same answer; commands take credits and enter
 * their lanes in delivery order, while their journal writes and signature checks run concurrently; `running{boot_id}`
 * is journaled for self-terminating kinds only (for the rest `accepted` already decides recovery).
 *
 * @module
 */
export { type AcceptanceContext, type AcceptanceVerdict, runAcceptanceChecks, UPGRADE_KIND } from "./acceptance.ts";
export { type AnyMessage, type CommandBody, commandBody, type IncomingCommand } from "./command.ts";
export { type CommandJournal, Dispatcher, type DispatcherOptions, type SpecRequester } from "./dispatcher.ts";
export { type HandlerContext, HandlerRegistry, type HandlerResult, type KindHandler } from "./handlers.ts";
export {
  DEFAULT_KIND_TIMEOUT_MS,
  type FlagName,
  type KindFlags,
  type KindRole,
  kindRoleOf,
  KINDS,
  kindsForRole,
  type KindSpec,
  type Lane,
  lookupKind,
  type Role,
  ROLES,
} from "./kinds.ts";
export { LANE_LIMITS, type LaneJob, LanePool, LaneStopped } from "./lanes.ts";
export { HOST_LOCK, LockWaitAborted, ResourceLocks } from "./locks.ts";
export {
  CommandFailed,
  InvalidPayload,
  type RejectReason,
  TERMINAL_REJECT_REASONS,
  type TerminalRejectReason,
} from "./rejection.ts";
export {
  type CommandUpdate,
  nodeRebootResult,
  terminalUpdate,
  updateFromEntry,
  type UpdateSink,
  type UpdateState,
} from "./results.ts";
export {
  CommandDecodeError,
  incomingFromWire,
  MAX_COMMAND_BODY_BYTES,
  MAX_COMMAND_ID_BYTES,
  MAX_COMMAND_KIND_BYTES,
  MAX_COMMAND_STRING_BYTES,
  timestampMs,
  updateToWire,
} from "./wire.ts";
