/**
 * Test support: protobufjs' own runtime, configured as bcd configured it before it had its own (`long.js` and Node's
 * `Buffer` off, 64-bit reads refusing values beyond `Number.MAX_SAFE_INTEGER` with the same
 * {@link UnsafeIntegerError}). Tests compare bcd's runtime with it byte for byte, and protobufjs' reflection (which
 * shares this runtime) builds values for every message. Never imported by an agent: it loads Node compatibility.
 *
 * @module
 */

import $protobuf from "protobufjs/minimal.js";
import { UnsafeIntegerError } from "./reader.ts";

type ReaderProto = Record<"int64" | "uint64" | "sint64" | "fixed64" | "sfixed64", (this: unknown) => number>;

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
}

configure();

/** protobufjs/minimal, configured; the generated module can run on it in place of `runtime/mod.ts`. */
export default $protobuf;
