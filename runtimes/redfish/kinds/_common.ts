/**
 * What the `bmc.*` handlers share: reading a resource's string fields, and waiting on the injected clock for a state to read back.
 *
 * @module
 */
import type { RedfishClient, RedfishResource } from "../client.ts";
import { RedfishError } from "../errors.ts";

/** `r[key]` when it is a string, else `""`. */
export function str(r: RedfishResource | undefined, key: string): string {
  const v = r?.[key];
  return typeof v === "string" ? v : "";
}

/** `r[key]` when it is an object. */
export function obj(r: RedfishResource | undefined, key: string): RedfishResource | undefined {
  const v = r?.[key];
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v as RedfishResource : undefined;
}

/** The target of action `name` (`#ComputerSystem.Reset`) of a resource, or `undefined` when it lists none. */
export function actionTarget(r: RedfishResource, name: string): string | undefined {
  const a = obj(obj(r, "Actions"), name);
  const t = a?.target;
  return typeof t === "string" ? t : undefined;
}

/**
 * Reads `path` every `pollMs` until `done(resource)` or `withinMs` passed (on the client's clock, through `sleep`);
 * returns the last resource read and whether `done` held.
 */
export async function readUntil(
  c: RedfishClient,
  path: string,
  done: (r: RedfishResource) => boolean,
  o: { withinMs: number; pollMs: number; sleep: (ms: number, s?: AbortSignal) => Promise<void>; signal: AbortSignal },
): Promise<{ resource: RedfishResource; reached: boolean }> {
  let waited = 0;
  for (;;) {
    const r = (await c.get(path)).body;
    if (done(r)) return { resource: r, reached: true };
    if (waited + o.pollMs > o.withinMs || o.signal.aborted) return { resource: r, reached: false };
    await o.sleep(o.pollMs, o.signal);
    waited += o.pollMs;
  }
}

/** A BMC answer that lacks what the schema promises. */
export function missing(what: string): RedfishError {
  return new RedfishError("bmc-bad-response", what);
}
