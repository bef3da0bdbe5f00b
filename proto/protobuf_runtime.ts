/**
 * The protobufjs runtime the generated code (`proto/gen/bcd.js`) imports, configured once for bcd before any message
 * class exists:
 *
 * - 64-bit integers are plain numbers (`--force-number` types them so). `long.js` is switched off, and every 64-bit
 *   read refuses a value beyond `Number.MAX_SAFE_INTEGER` with {@link UnsafeIntegerError} rather than round it: a
 *   generation, a sequence number or a byte count that silently lost precision would be worse than a refused frame.
 * - Node's `Buffer` is switched off, so encoders return and decoders yield plain `Uint8Array`s.
 * - Strings are decoded with a fatal UTF-8 decoder: proto3 requires valid UTF-8, and a lenient decoder would let two
 *   different byte strings read as the same name. An invalid one throws the decoder's `TypeError`.
 *
 * Import the message classes from `proto/mod.ts`; this module exists so the generated code cannot run unconfigured.
 *
 * @module
 */

import $protobuf from "protobufjs/minimal.js";

/** A 64-bit field held a value a JavaScript number cannot represent exactly. */
export class UnsafeIntegerError extends RangeError {
  /** The reason string, as {@link WireDecodeError} reports it. */
  readonly reason = "unsafe-integer";
  /** The rounded value that was read. */
  readonly approximate: number;
  constructor(approximate: number) {
    super(`64-bit integer ${approximate} is beyond Number.MAX_SAFE_INTEGER; refused rather than rounded`);
    this.name = "UnsafeIntegerError";
    this.approximate = approximate;
  }
}

type ReaderProto =
  & Record<"int64" | "uint64" | "sint64" | "fixed64" | "sfixed64", (this: unknown) => number>
  & { string: (this: { bytes(): Uint8Array }) => string };

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function configure(): void {
  const util = $protobuf.util as unknown as { Long: unknown; Buffer: unknown };
  util.Long = null;
  util.Buffer = null;
  $protobuf.configure();
  // After configure() the five 64-bit readers call LongBits.toNumber; wrap each to refuse unsafe values.
  const proto = $protobuf.Reader.prototype as unknown as ReaderProto;
  for (const name of ["int64", "uint64", "sint64", "fixed64", "sfixed64"] as const) {
    const read = proto[name];
    proto[name] = function (this: unknown): number {
      const n = read.call(this);
      if (!Number.isSafeInteger(n)) throw new UnsafeIntegerError(n);
      return n;
    };
  }
  proto.string = function (this: { bytes(): Uint8Array }): string {
    return UTF8.decode(this.bytes());
  };
}

configure();

export default $protobuf;
