/**
 * A kind's payload and result as a handler sees them: {@link payloadOf} decodes the command's payload as the kind's
 * request message (`InvalidPayload`, so `FAILED invalid-payload`, when it does not), {@link resultOf} packs the kind's
 * result message for `HandlerResult.result`.
 *
 * @module
 */
import type { AnyMessage, CommandBody } from "./command.ts";
import { InvalidPayload } from "./rejection.ts";
import {
  packResult,
  type PayloadOf,
  type ResultInit,
  unpackPayload,
  WireDecodeError,
  type WireKind,
} from "../../proto/mod.ts";

/** Decodes `command`'s payload as `kind`'s. */
export function payloadOf<K extends WireKind>(kind: K, command: CommandBody): PayloadOf<K> {
  const p = command.payload;
  if (p === undefined) throw new InvalidPayload(`${kind} needs a payload`);
  try {
    return unpackPayload(kind, { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}

/** Packs `kind`'s result. */
export function resultOf<K extends WireKind>(kind: K, r: ResultInit<K>): AnyMessage {
  const any = packResult(kind, r);
  return { typeUrl: any.type_url, value: any.value };
}
