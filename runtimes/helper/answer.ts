/**
 * The helper server's answers, typed by the protocol: each op's runner returns an {@link Answer}, which only
 * {@link answer} makes, from a value of `HelperResults[op]` (`core/helper/protocol.ts`) for the request's own op. The
 * node's client reads answers as the same `HelperResults`, so client and server meet in one declaration and a
 * runner that answered another shape is a compile error, not a `malformed` at run time.
 *
 * @module
 */
import type { HelperRequest, HelperResults } from "../../core/helper/mod.ts";

declare const _checked: unique symbol;

/**
 * An answer the compiler checked against the protocol: only {@link answer} makes one, from a value of
 * `HelperResults[op]` for the request's own op, so the server cannot answer a shape the node's client (which reads
 * the same `HelperResults`) does not expect.
 */
export type Answer = { readonly [_checked]: true };

/** `v` as the answer to `req` (inside a `case` on `req.op`, `R` is that op's request). */
export function answer<R extends HelperRequest>(_req: R, v: HelperResults[R["op"]]): Answer {
  return v as unknown as Answer;
}
