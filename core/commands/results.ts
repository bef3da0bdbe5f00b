/**
 * Command updates (000 §Results and acknowledgements): `ACKED` once `accepted` is durable, `RUNNING` when the side
 * effect starts, one terminal outcome (`SUCCEEDED`, `FAILED` with a code, `REJECTED` with a reason, `CANCELLED`),
 * each with the `boot_id` it was produced in. Terminal updates are built from the journal's done entry, so a replay
 * (until `Ack.command_ids` names it) is byte for byte the first send; an attested kind's `node_sig` covers the command
 * id, the state and the SHA-256 of the result's value (Ed25519 is deterministic, so a re-signed replay is identical).
 *
 * @module
 */
import type { CommandResult, DoneEntry } from "../journal/mod.ts";
import { signCommandResult } from "../pki/attest.ts";
import type { AnyMessage } from "./command.ts";
import { decodeAny } from "./any_codec.ts";
import { lookupKind } from "./kinds.ts";
import { packResult } from "../../proto/mod.ts";

/** The states a `CommandUpdate` reports. */
export type UpdateState = "ACKED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "REJECTED" | "CANCELLED";

/** One `CommandUpdate`. */
export interface CommandUpdate {
  readonly commandId: string;
  readonly kind: string;
  readonly state: UpdateState;
  /** `FAILED`: `interrupted`, `invalid-payload`, `internal` or kind-specific. */
  readonly errorCode?: string;
  /** `REJECTED`: the seed's reason (`BUSY` included, never journaled). */
  readonly reason?: string;
  readonly message?: string;
  readonly bootId: string;
  readonly result?: AnyMessage;
  /** Attested kinds' terminal updates. */
  readonly nodeSig?: Uint8Array;
}

/** Where updates go: the session (or a test). */
export interface UpdateSink {
  send(update: CommandUpdate): void;
}

/** The terminal update of a journaled result; signs it when the kind is attested and a node key is given. */
export async function terminalUpdate(
  commandId: string,
  kind: string,
  result: CommandResult,
  nodeKey: CryptoKey | undefined,
): Promise<CommandUpdate> {
  const base = unsignedUpdate(commandId, kind, result);
  if (nodeKey === undefined || !signsResult(kind, result, nodeKey)) return base;
  const nodeSig = await signCommandResult(nodeKey, commandId, result.state, base.result?.value ?? new Uint8Array());
  return { ...base, nodeSig };
}

/** Whether {@link terminalUpdate} signs `result`: an attested kind, a node key, and a result other than `REJECTED`. */
export function signsResult(kind: string, result: CommandResult, nodeKey: CryptoKey | undefined): boolean {
  return nodeKey !== undefined && result.state !== "REJECTED" && (lookupKind(kind)?.attested ?? false);
}

/**
 * The terminal update of a journaled result without `node_sig`: {@link terminalUpdate}'s whole answer when
 * {@link signsResult} is false, built without a promise (a settled command's update is on the event loop's path).
 */
export function unsignedUpdate(commandId: string, kind: string, result: CommandResult): CommandUpdate {
  const u: { -readonly [K in keyof CommandUpdate]: CommandUpdate[K] } = {
    commandId,
    kind,
    state: result.state,
    bootId: result.bootId,
  };
  if (result.message) u.message = result.message;
  if (result.body !== undefined && result.body.length > 0) u.result = decodeAny(result.body);
  else if (result.rebooted) u.result = nodeRebootResult(result.previousBootId ?? "");
  if (result.state === "FAILED" && result.code) u.errorCode = result.code;
  if (result.state === "REJECTED" && result.code) u.reason = result.code;
  return u;
}

/** The terminal update of a done journal entry. */
export function updateFromEntry(entry: DoneEntry, nodeKey: CryptoKey | undefined): Promise<CommandUpdate> {
  return terminalUpdate(entry.id, entry.kind, entry.result, nodeKey);
}

/** `NodeRebootResult{previous_boot_id, rebooted: true}` as an Any, for a `rebooted` result the journal settled. */
export function nodeRebootResult(previousBootId: string): AnyMessage {
  const any = packResult("node.reboot", { previous_boot_id: previousBootId, rebooted: true });
  return { typeUrl: any.type_url, value: any.value };
}
