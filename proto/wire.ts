/**
 * Typed encode and decode over the generated message classes, with the bounds every decoder keeps: the input size is
 * checked before a byte is parsed, and whatever goes wrong while parsing (truncation, a bad wire type, nesting past
 * the recursion limit, an unsafe 64-bit integer, invalid UTF-8) becomes one {@link WireDecodeError} naming the message
 * and the reason, never a crash of another type.
 *
 * @module
 */

import { bcd } from "./gen/bcd.js";
import { checkMessageBudget, DEFAULT_MAX_MESSAGES, MessageBudgetError } from "./message_budget.ts";
import { UnsafeIntegerError } from "./runtime/reader.ts";

/** The default bound on a session frame (and on any message decoded without an explicit bound): 4 MiB. */
export const DEFAULT_MAX_FRAME_BYTES = 4 * 1024 * 1024;

/** Why a body did not decode. */
export type WireDecodeReason =
  /** Larger than the bound; refused before decoding. */
  | "too-large"
  /** Would make the decoder build more sub-messages than the budget; refused before decoding. */
  | "too-many-messages"
  /** Ends inside a field. */
  | "truncated"
  /** Not a protobuf encoding of the message (bad tag or wire type, a length past its parent). */
  | "malformed"
  /** Nested deeper than the recursion limit. */
  | "too-deep"
  /** A 64-bit integer beyond Number.MAX_SAFE_INTEGER. */
  | "unsafe-integer"
  /** A string field that is not valid UTF-8. */
  | "invalid-utf8"
  /** An `Any` whose type_url is not the expected message. */
  | "type-mismatch"
  /** A JSON object that does not describe the message. */
  | "invalid-json";

/** A body that could not be decoded as the message it was meant to be. */
export class WireDecodeError extends Error {
  /** The fully qualified message name, e.g. `bcd.v1.NodeFrame`. */
  readonly messageName: string;
  readonly reason: WireDecodeReason;
  /** The size of the input in bytes (or characters for JSON). */
  readonly size: number;

  constructor(messageName: string, reason: WireDecodeReason, size: number, detail: string, options?: ErrorOptions) {
    super(`${messageName}: ${reason} (${size} bytes): ${detail}`, options);
    this.name = "WireDecodeError";
    this.messageName = messageName;
    this.reason = reason;
    this.size = size;
  }
}

/** What every generated message class offers; `M` is the decoded type, `P` what encode accepts. */
export interface MessageClass<M = unknown, P = never> {
  encode(message: P): { finish(): Uint8Array };
  decode(bytes: Uint8Array): M;
  getTypeUrl(prefix?: string): string;
}

/**
 * The decoded type of a message class: the class instance narrowed to its oneof shape, with every nested message read
 * the way the decoder builds it. Scalars, lists and maps always read as values (a field absent on the wire reads as
 * its default from the prototype), at every depth; sub-messages keep their optionality (absent is `null`/`undefined`),
 * and oneof members narrow on their discriminator. Default lists and maps are shared frozen objects: copy before
 * mutating.
 */
export type Decoded<C> = C extends { decode(reader: Uint8Array): infer M } ? Full<M> : never;

type Scalar = string | number | boolean | bigint | Uint8Array;
// deno-lint-ignore ban-types
type Fn = Function;

/** Deeply: scalars, lists and maps of a decoded message are always present; sub-messages keep their optionality. */
export type Full<T> = T extends Scalar | Fn ? T
  : T extends readonly (infer E)[] ? Full<E>[]
  : T extends object ?
      & {
        [K in keyof T as K extends "$unknowns" ? never : IsPresent<T[K]> extends true ? K : never]-?: FullValue<
          NonNullable<T[K]>
        >;
      }
      & {
        [K in keyof T as K extends "$unknowns" ? never : IsPresent<T[K]> extends true ? never : K]: OptionalValue<T[K]>;
      }
  : T;

/** A field that always reads as a value after decoding: a scalar (not null-only), a list or a map. */
type IsPresent<V> = [NonNullable<V>] extends [never] ? false
  : NonNullable<V> extends Scalar | readonly unknown[] | Fn ? true
  : string extends keyof NonNullable<V> ? true
  : false;

type FullValue<V> = V extends Scalar | Fn | readonly unknown[] ? Full<V>
  : string extends keyof V ? { [k: string]: Full<V[string]> }
  : Full<V>;

type OptionalValue<V> = [NonNullable<V>] extends [never] ? V : Full<NonNullable<V>> | Exclude<V, NonNullable<V>>;

/** What `encode` of a message class accepts: a plain object with any subset of the fields. */
export type Props<C> = C extends { encode(message: infer P, ...rest: never[]): unknown } ? P : never;

/** Options of the decoders. */
export interface DecodeOptions {
  /** Inputs larger than this many bytes are refused before decoding; default {@link DEFAULT_MAX_FRAME_BYTES}. */
  readonly maxBytes?: number;
  /**
   * Inputs that would make the decoder build more sub-messages and map entries than this are refused before decoding
   * (see `message_budget.ts`); default {@link DEFAULT_MAX_MESSAGES}.
   */
  readonly maxMessages?: number;
}

const _names = new WeakMap<object, string>();

/** The fully qualified name of a message class, e.g. `bcd.v1.Hello` (worked out once per class). */
export function messageName(type: { getTypeUrl(prefix?: string): string }): string {
  let name = _names.get(type);
  if (name === undefined) {
    const url = type.getTypeUrl("");
    name = url.startsWith("/") ? url.slice(1) : url;
    _names.set(type, name);
  }
  return name;
}

/** Encodes `value` as `type`; the returned bytes are a fresh plain Uint8Array. */
export function encodeMessage<C extends MessageClass<unknown, never>>(type: C, value: Props<C>): Uint8Array {
  return (type as unknown as MessageClass<unknown, Props<C>>).encode(value).finish();
}

function classify(e: unknown): [WireDecodeReason, string] {
  if (e instanceof UnsafeIntegerError) return ["unsafe-integer", e.message];
  const message = e instanceof Error ? e.message : String(e);
  // TextDecoder's fatal mode throws a TypeError naming the encoding.
  if (e instanceof TypeError && /encoded data|utf-?8/i.test(message)) return ["invalid-utf8", message];
  if (/max depth exceeded/.test(message) || (e instanceof RangeError && /call stack/i.test(message))) {
    return ["too-deep", message];
  }
  if (e instanceof RangeError && /index out of range/.test(message)) return ["truncated", message];
  return ["malformed", message];
}

/**
 * Decodes `bytes` as `type`, refusing inputs over `maxBytes`, and inputs that would build more than `maxMessages`
 * objects, before parsing.
 *
 * @throws {WireDecodeError} for anything that is not a well-formed encoding of `type` within the bound.
 * @example
 * ```ts
 * const frame = decodeMessage(bcd.v1.NodeFrame, bytes, { maxBytes: 1 << 20 });
 * ```
 */
export function decodeMessage<C extends MessageClass<unknown, never>>(
  type: C,
  bytes: Uint8Array,
  options: DecodeOptions = {},
): Decoded<C> {
  const max = options.maxBytes ?? DEFAULT_MAX_FRAME_BYTES;
  if (bytes.byteLength > max) {
    throw new WireDecodeError(messageName(type), "too-large", bytes.byteLength, `the bound is ${max} bytes`);
  }
  // A Node Buffer (or any subclass) would make the reader yield Buffers; read a plain view of the same bytes.
  const view = bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  const name = messageName(type);
  try {
    checkMessageBudget(name, view, options.maxMessages ?? DEFAULT_MAX_MESSAGES);
    return type.decode(view) as Decoded<C>;
  } catch (e) {
    if (e instanceof MessageBudgetError) {
      throw new WireDecodeError(name, e.reason, bytes.byteLength, e.message, { cause: e });
    }
    const [reason, detail] = classify(e);
    throw new WireDecodeError(name, reason, bytes.byteLength, detail, { cause: e });
  }
}

/** A frame the node sends, decoded. */
export type NodeFrame = Decoded<typeof bcd.v1.NodeFrame>;
/** A frame the gateway sends, decoded. */
export type GatewayFrame = Decoded<typeof bcd.v1.GatewayFrame>;

/** Encodes a node-to-gateway session frame. */
export function encodeNodeFrame(frame: Props<typeof bcd.v1.NodeFrame>): Uint8Array {
  return encodeMessage(bcd.v1.NodeFrame, frame);
}

/** Decodes a node-to-gateway session frame within the frame bound (default 4 MiB). */
export function decodeNodeFrame(bytes: Uint8Array, options?: DecodeOptions): NodeFrame {
  return decodeMessage(bcd.v1.NodeFrame, bytes, options);
}

/** Encodes a gateway-to-node session frame. */
export function encodeGatewayFrame(frame: Props<typeof bcd.v1.GatewayFrame>): Uint8Array {
  return encodeMessage(bcd.v1.GatewayFrame, frame);
}

/** Decodes a gateway-to-node session frame within the frame bound (default 4 MiB). */
export function decodeGatewayFrame(bytes: Uint8Array, options?: DecodeOptions): GatewayFrame {
  return decodeMessage(bcd.v1.GatewayFrame, bytes, options);
}
