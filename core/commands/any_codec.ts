/**
 * `google.protobuf.Any` as the journal stores a result: the Any's wire encoding (proto/), opaque to the journal, so a
 * replay carries the kind's result message unchanged.
 *
 * @module
 */
import { decodeMessage, encodeMessage, google } from "../../proto/mod.ts";
import type { AnyMessage } from "./command.ts";

/** The largest Any decoded (a result message). */
export const MAX_ANY_BYTES = 4 * 1024 * 1024;

/** Encodes an Any. */
export function encodeAny(msg: AnyMessage): Uint8Array {
  return encodeMessage(google.protobuf.Any, { type_url: msg.typeUrl, value: msg.value });
}

/** Decodes an Any within {@link MAX_ANY_BYTES}; throws `WireDecodeError`. */
export function decodeAny(bytes: Uint8Array): AnyMessage {
  const a = decodeMessage(google.protobuf.Any, bytes, { maxBytes: MAX_ANY_BYTES });
  return { typeUrl: a.type_url, value: a.value };
}
