/**
 * bcd's protobuf runtime: what the message classes (`proto/gen/bcd.js`, compiled from the descriptor by
 * `proto/classes.ts`, and `pbjs`'s static module of them, `proto/gen/bcd_static.js`, which tests compare them with)
 * import and call, as plain ES modules on web-platform APIs only. No `node:` module, no `process`, `Buffer`, `global` or
 * `require`: protobufjs' own runtime touches all of them at load, and in Deno the first touch of `process` or `global`
 * starts the Node compatibility layer, about 20 ms before an agent can send its first `Hello` (issue 24).
 *
 * The parts, each with protobufjs 8.8.1's semantics for what bcd uses (ported from it; BSD-3-Clause, see
 * `LICENSE.protobufjs`):
 *
 * - {@link Reader} (`reader.ts`): bounds every read before it reads or allocates; refuses 64-bit values beyond
 *   `Number.MAX_SAFE_INTEGER` with {@link UnsafeIntegerError}; strings with a fatal UTF-8 decoder; groups skipped at
 *   most {@link Reader.recursionLimit} deep.
 * - {@link Writer} (`writer.ts`): the bytes protobufjs writes for the same values, into one growing buffer; `finish()`
 *   returns a fresh `Uint8Array`.
 * - `util` (`gen_support.ts`), `roots`: the rest of the generated code's `$protobuf` surface.
 *
 * Judgement calls, written down: a lone UTF-16 surrogate in a string is written as U+FFFD (protobufjs wrote bytes
 * that are not UTF-8, which every decoder, ours included, refuses); a `bigint` or other non-number given for a 64-bit
 * field is refused with a `TypeError` (protobufjs wrote it as 0). The runtime has what the generated module calls and
 * no more; `runtime_test.ts` fails when regenerated static code calls a reader, writer or `$util` member it lacks (a
 * new field type), and compares every message's bytes, values and errors with the static code's on protobufjs'.
 *
 * Import message classes from `proto/mod.ts`; this module is the generated code's dependency.
 *
 * @example
 * ```ts
 * import { Reader, Writer } from "./proto/runtime/mod.ts";
 * const bytes = Writer.create().uint32(8).uint64(2 ** 40).finish(); // field 1, varint
 * const r = Reader.create(bytes);
 * r.tag(); // 8
 * r.uint64(); // 1099511627776
 * ```
 *
 * @module
 */

import { Reader } from "./reader.ts";
import { Writer } from "./writer.ts";
import { util } from "./gen_support.ts";

export { Reader, UnsafeIntegerError } from "./reader.ts";
export { Writer } from "./writer.ts";
export type { IConversionOptions } from "./gen_support.ts";

/** The generated module's `$protobuf`: its reader, writer, helpers, and the root its namespaces hang from. */
const runtime: {
  readonly Reader: typeof Reader;
  readonly Writer: typeof Writer;
  readonly util: typeof util;
  readonly roots: Record<string, Record<string, unknown>>;
} = { Reader, Writer, util, roots: {} };

export default runtime;
