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
  let any: AnyMessage | undefined;
  if (result.body !== undefined && result.body.length > 0) any = decodeAny(result.body);
  else if (result.rebooted) any = nodeRebootResult(result.previousBootId ?? "");
  const base = {
    commandId,
    kind,
    state: result.state,
    bootId: result.bootId,
    ...(result.message ? { message: result.message } : {}),
    ...(any ? { result: any } : {}),
    ...(result.state === "FAILED" && result.code ? { errorCode: result.code } : {}),
    ...(result.state === "REJECTED" && result.code ? { reason: result.code } : {}),
  };
  const attested = lookupKind(kind)?.attested ?? false;
  if (!attested || nodeKey === undefined || result.state === "REJECTED") return base;
  const nodeSig = await signCommandResult(nodeKey, commandId, result.state, any?.value ?? new Uint8Array());
  return { ...base, nodeSig };
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
