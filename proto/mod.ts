/**
 * The wire schema of bcd (`bcd.v1`): the `.proto` sources under `proto/bcd/v1/`, what protobufjs' CLI generates from
 * them into `proto/gen/` (the descriptor `bcd.json`, the types `bcd.d.ts`; regenerate with `deno task proto`; CI
 * diffs it with `deno task proto:check`), and the typed layer every other module uses:
 *
 * - `bcd` and `google`: the message classes (`bcd.v1.Hello`, `bcd.v1.NodeSpec`, ...), built from the descriptor on
 *   first use (`classes.ts`), and their types.
 * - {@link decodeMessage} / {@link encodeMessage} and the session frame helpers. Before decoding, a size bound (4 MiB
 *   by default) and a budget of sub-messages (a schema-aware scan, so 4 MiB of empty sub-messages cannot make the
 *   decoder build millions of objects); one typed {@link WireDecodeError} for every body that does not decode.
 *   `Decoded<typeof bcd.v1.X>` (short names in `types.ts`) types a decoded message the way the decoder builds it.
 * - {@link packAny} / {@link unpackAny} for command payloads and results, and {@link KIND_MESSAGES}, the payload and
 *   result message of every kind.
 * - Not here: `canonical_json.ts` (the canonical, sorted-key JSON of a NodeSpec and its strict reader) and the
 *   generated classes' `fromObject`, which only it and tests use: `gen/bcd_from_object.js` installs them when
 *   imported, so an agent's bundle does not carry them (`from_object_split.ts`).
 *
 * Field names keep the `.proto` (and the seed's) snake_case spelling. 64-bit integers are numbers; a value beyond
 * `Number.MAX_SAFE_INTEGER` on the wire is refused (`unsafe-integer`), never rounded. Strings must be valid UTF-8.
 * Unknown fields (a newer peer's additions) are skipped, not kept: code that must keep bytes keeps the bytes.
 *
 * @example
 * ```ts
 * import { bcd, decodeNodeFrame, encodeNodeFrame } from "../proto/mod.ts";
 * const bytes = encodeNodeFrame({ heartbeat: { applied_generation: 7 } });
 * const frame = decodeNodeFrame(bytes);
 * if (frame.frame === "heartbeat") frame.heartbeat.applied_generation; // 7
 * ```
 *
 * @module
 */

export { bcd, google } from "./gen/bcd.js";
export { UnsafeIntegerError } from "./runtime/reader.ts";
export { DEFAULT_MAX_MESSAGES } from "./message_budget.ts";
export {
  type Decoded,
  decodeGatewayFrame,
  decodeMessage,
  decodeNodeFrame,
  type DecodeOptions,
  DEFAULT_MAX_FRAME_BYTES,
  encodeGatewayFrame,
  encodeMessage,
  encodeNodeFrame,
  type Full,
  type GatewayFrame,
  type MessageClass,
  messageName,
  type NodeFrame,
  type Props,
  WireDecodeError,
  type WireDecodeReason,
} from "./wire.ts";
export { packAny, type PackedAny, TYPE_URL_PREFIX, typeUrlOf, unpackAny } from "./any.ts";
export {
  EXTRA_KIND_MESSAGES,
  isWireKind,
  KIND_MESSAGES,
  packPayload,
  packResult,
  type PayloadInit,
  type PayloadOf,
  type ResultInit,
  type ResultOf,
  unpackPayload,
  unpackResult,
  type WireKind,
} from "./kinds_map.ts";
export type * from "./types.ts";
