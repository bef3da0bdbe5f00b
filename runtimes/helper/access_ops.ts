/**
 * The helper's `access.*` ops over its {@link AccessHost} backend: `access.observe` reads, `access.apply` runs under
 * the helper's write lock (one writer of sshd's files at a time).
 *
 * @module
 */
import { HelperError, type HelperRequest } from "../../core/helper/mod.ts";
import type { HelperBackends } from "./backends.ts";
import type { Mutex } from "./mutex.ts";
import { type Answer, answer } from "./answer.ts";

/** Runs `access.observe` or `access.apply`. */
export async function runAccessOp(
  b: HelperBackends,
  req: Extract<HelperRequest, { op: "access.observe" | "access.apply" }>,
  writes: Mutex,
): Promise<Answer> {
  const host = b.access;
  if (!host) throw new HelperError("failed", `${req.op}: this helper has no access backend configured`);
  if (req.op === "access.observe") return answer(req, await host.observe());
  const files = req.args;
  return answer(req, await writes.run(() => host.apply(files)));
}
