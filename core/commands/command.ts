/**
 * The command as the dispatcher sees it: the decoded `CommandBody` with its exact received bytes (signatures are
 * verified over those, never a re-encoding), the signature, the delivery attempt and the quorum fields.
 *
 * @module
 */

/** A `google.protobuf.Any`: the kind's request or result message. */
export interface AnyMessage {
  readonly typeUrl: string;
  readonly value: Uint8Array;
}

/** `CommandBody`, field by field (000 §The command body), with `not_after` as unix milliseconds of server time. */
export interface CommandBody {
  readonly id: string;
  readonly nodeId: string;
  readonly seq: number;
  readonly kind: string;
  readonly payload?: AnyMessage;
  readonly lane: string;
  /** Absent: the command is `EXPIRED`. */
  readonly notAfterMs?: number;
  readonly minGeneration: number;
  readonly retrySafe: boolean;
  readonly idempotencyKey: string;
  readonly selfTerminating: boolean;
  readonly attested: boolean;
  readonly workflowId: string;
  readonly stepId: string;
  readonly traceparent: string;
  /** Empty for an unbatched command. */
  readonly batchId: string;
}

/** A delivered `Command`. */
export interface IncomingCommand {
  /** The exact `CommandBody` bytes received. */
  readonly bodyBytes: Uint8Array;
  /** `bodyBytes` decoded. */
  readonly body: CommandBody;
  /** `Command.signature`; absent when the command came unsigned. */
  readonly signature?: Uint8Array;
  /** Informational; outside the signature. */
  readonly attempt: number;
  readonly batchApproval?: Uint8Array;
  readonly batchProof?: Uint8Array;
}

/** A body with every optional field empty, for tests and fakes. */
export function commandBody(fields: Partial<CommandBody> & Pick<CommandBody, "id" | "nodeId" | "kind">): CommandBody {
  return {
    seq: 0,
    lane: "",
    minGeneration: 0,
    retrySafe: false,
    idempotencyKey: "",
    selfTerminating: false,
    attested: false,
    workflowId: "",
    stepId: "",
    traceparent: "",
    batchId: "",
    ...fields,
  };
}
