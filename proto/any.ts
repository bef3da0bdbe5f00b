/**
 * `google.protobuf.Any` packing for command payloads and results: the type URL is
 * `type.googleapis.com/bcd.v1.<Message>` and the value is the message's encoding.
 *
 * @module
 */

import type { google } from "./gen/bcd.js";
import {
  type Decoded,
  decodeMessage,
  type DecodeOptions,
  encodeMessage,
  type MessageClass,
  messageName,
  type Props,
  WireDecodeError,
} from "./wire.ts";

/** The type URL prefix of every packed message. */
export const TYPE_URL_PREFIX = "type.googleapis.com/";

/** A packed message as it sits in CommandBody.payload or CommandUpdate.result. */
export interface PackedAny {
  type_url: string;
  value: Uint8Array;
}

/** The type URL of a message class: `type.googleapis.com/bcd.v1.<Message>`. */
export function typeUrlOf(type: { getTypeUrl(prefix?: string): string }): string {
  return TYPE_URL_PREFIX + messageName(type);
}

/** Packs `value` as an `Any` of `type`. */
export function packAny<C extends MessageClass<unknown, never>>(type: C, value: Props<C>): PackedAny {
  return { type_url: typeUrlOf(type), value: encodeMessage(type, value) };
}

/**
 * Unpacks an `Any` that must hold `type`.
 *
 * @throws {WireDecodeError} `type-mismatch` when the type URL names another message (or is missing), or any decode
 *   reason of {@link decodeMessage}.
 */
export function unpackAny<C extends MessageClass<unknown, never>>(
  type: C,
  any: google.protobuf.Any.$Properties | null | undefined,
  options?: DecodeOptions,
): Decoded<C> {
  const want = typeUrlOf(type);
  const got = any?.type_url ?? "";
  const value = any?.value ?? new Uint8Array(0);
  if (got !== want) {
    throw new WireDecodeError(messageName(type), "type-mismatch", value.byteLength, `type_url is "${got}"`);
  }
  return decodeMessage(type, value, options);
}
