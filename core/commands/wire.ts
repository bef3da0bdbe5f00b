/**
 * The commands' edge to the wire (`proto/`): a delivered `bcd.v1.Command` becomes an {@link IncomingCommand} (its
 * body decoded once, its bytes kept for the signature), and a {@link CommandUpdate} becomes a `bcd.v1.CommandUpdate`.
 *
 * @module
 */
import { bcd, decodeMessage, google, type Props, WireDecodeError } from "../../proto/mod.ts";
import type { CommandBody, IncomingCommand } from "./command.ts";
import type { CommandUpdate } from "./results.ts";

/** The largest `CommandBody` decoded. */
export const MAX_COMMAND_BODY_BYTES = 1024 * 1024;

/**
 * The longest command id and kind taken from the wire, in UTF-8 bytes (issue 28, item 5): both are journaled and go
 * back in every `Hello` until acked, so a gateway must not be able to make them megabytes long. A UUID is 36 bytes;
 * the longest kind bcd knows is under 32.
 */
export const MAX_COMMAND_ID_BYTES = 128;
/** See {@link MAX_COMMAND_ID_BYTES}. */
export const MAX_COMMAND_KIND_BYTES = 64;
/** The longest other string of a body that is journaled or echoed (idempotency key, workflow, step, batch ids). */
export const MAX_COMMAND_STRING_BYTES = 256;

/**
 * A `Command` that cannot be taken: its body does not decode, or its id is empty or oversize, its kind or another
 * journaled string oversize. It cannot be answered under an id that is not one, only logged (bounded).
 */
export class CommandDecodeError extends Error {
  override name = "CommandDecodeError";
}

/** Unix ms of a `google.protobuf.Timestamp`, or undefined when absent. */
export function timestampMs(ts: { seconds?: number | null; nanos?: number | null } | null | undefined) {
  if (ts === null || ts === undefined) return undefined;
  return (ts.seconds ?? 0) * 1000 + Math.floor((ts.nanos ?? 0) / 1_000_000);
}

function _bounded(field: string, v: string, max: number): void {
  // A UTF-8 character is at most 3 bytes per UTF-16 unit, so short strings need no encoding.
  if (v.length * 3 <= max) return;
  const n = new TextEncoder().encode(v).length;
  if (n > max) throw new CommandDecodeError(`a command ${field} of ${n} bytes (at most ${max})`);
}

/**
 * Decodes a delivered `Command`; the body bytes are kept exactly as received. Throws {@link CommandDecodeError} for
 * a body that does not decode, an empty id, or an id, kind or journaled string over its bound.
 */
export function incomingFromWire(cmd: Props<typeof bcd.v1.Command>): IncomingCommand {
  const bodyBytes = cmd.body ?? new Uint8Array();
  let b;
  try {
    b = decodeMessage(bcd.v1.CommandBody, bodyBytes, { maxBytes: MAX_COMMAND_BODY_BYTES });
  } catch (e) {
    if (e instanceof WireDecodeError) {
      throw new CommandDecodeError(`a command body that does not decode: ${e.message}`, { cause: e });
    }
    throw e;
  }
  _bounded("id", b.id, MAX_COMMAND_ID_BYTES);
  if (b.id === "") throw new CommandDecodeError("a command with an empty id");
  _bounded("kind", b.kind, MAX_COMMAND_KIND_BYTES);
  _bounded("idempotency_key", b.idempotency_key, MAX_COMMAND_STRING_BYTES);
  _bounded("workflow_id", b.workflow_id, MAX_COMMAND_STRING_BYTES);
  _bounded("step_id", b.step_id, MAX_COMMAND_STRING_BYTES);
  _bounded("batch_id", b.batch_id, MAX_COMMAND_STRING_BYTES);
  const notAfterMs = timestampMs(b.not_after);
  // Optional fields are set only when present (as spreads of `{}` did, without their objects: every command).
  const body: Mutable<CommandBody> = {
    id: b.id,
    nodeId: b.node_id,
    seq: b.seq,
    kind: b.kind,
    lane: b.lane,
    minGeneration: b.min_generation,
    retrySafe: b.retry_safe,
    idempotencyKey: b.idempotency_key,
    selfTerminating: b.self_terminating,
    attested: b.attested,
    workflowId: b.workflow_id,
    stepId: b.step_id,
    traceparent: b.traceparent,
    batchId: b.batch_id,
  };
  if (b.payload) body.payload = { typeUrl: b.payload.type_url ?? "", value: b.payload.value ?? new Uint8Array() };
  if (notAfterMs !== undefined) body.notAfterMs = notAfterMs;
  const incoming: Mutable<IncomingCommand> = { bodyBytes, body, attempt: cmd.attempt ?? 0 };
  const sig = cmd.signature;
  if (sig && sig.length > 0) incoming.signature = sig;
  const approval = cmd.batch_approval;
  if (approval && approval.length > 0) incoming.batchApproval = approval;
  const proof = cmd.batch_proof;
  if (proof && proof.length > 0) incoming.batchProof = proof;
  return incoming;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The wire `CommandUpdate` of an update. */
export function updateToWire(u: CommandUpdate): Props<typeof bcd.v1.CommandUpdate> {
  return {
    command_id: u.commandId,
    state: bcd.v1.CommandUpdate.State[u.state],
    error_code: u.errorCode ?? "",
    reason: u.reason ?? "",
    message: u.message ?? "",
    boot_id: u.bootId,
    kind: u.kind,
    ...(u.result ? { result: google.protobuf.Any.create({ type_url: u.result.typeUrl, value: u.result.value }) } : {}),
    ...(u.nodeSig ? { node_sig: u.nodeSig } : {}),
  };
}
