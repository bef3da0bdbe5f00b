/**
 * Parent-aware conflicts (000 §Device assignments): a whole GPU is refused while part of it is held, a MIG instance
 * or slot while its GPU is held whole, two holds never share an atom, and no hold is bound on a GPU that is passed
 * through to a VM.
 *
 * @module
 */
import type { DeviceClass } from "./classes.ts";

/** One atom a hold has (or asks for). */
export interface Claim {
  readonly allocationId: string;
  readonly class: DeviceClass;
  readonly atom: string;
  readonly gpuUuid: string;
}

/** A GPU the `instances` converger passes through to a VM (counting domains still running after the last pass). */
export interface PassthroughGpu {
  readonly gpuUuid: string;
  readonly instance: string;
}

/** The first held claim `c` conflicts with, or `undefined`. */
export function conflictingClaim(c: Claim, held: readonly Claim[]): Claim | undefined {
  return held.find((h) => {
    if (h.atom === c.atom) return true;
    if (h.gpuUuid !== c.gpuUuid) return false;
    return h.class === "gpu" || c.class === "gpu";
  });
}

/** A sentence naming the conflict, for `AllocationFailed.message`. */
export function describeConflict(c: Claim, h: Claim): string {
  if (h.atom === c.atom) return `${c.atom} is already held by allocation ${h.allocationId}`;
  if (c.class === "gpu") return `GPU ${c.gpuUuid} is partly held (${h.atom}) by allocation ${h.allocationId}`;
  return `${c.atom}: GPU ${c.gpuUuid} is held whole by allocation ${h.allocationId}`;
}

/** The claims of one assignment that conflict among themselves (a GPU and a part of it, or an atom twice). */
export function selfConflict(claims: readonly Claim[]): [Claim, Claim] | undefined {
  for (let i = 0; i < claims.length; i++) {
    const h = conflictingClaim(claims[i]!, claims.slice(0, i));
    if (h) return [claims[i]!, h];
  }
  return undefined;
}
