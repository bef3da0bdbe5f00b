/**
 * The `instances` converger's volume rules (000 §Persistent volumes), as pure helpers: an instance's attachments with
 * the serials of the section's volumes, in spec order (the first is `vdb`), or why it cannot have them.
 *
 * @module
 */
import type { bcd } from "../../../proto/mod.ts";
import { MAX_ATTACHMENTS, type VolumeAttachment } from "../../volumes/grammar.ts";

type InstanceSpec = bcd.v1.InstanceSpec.$Properties;
type InstancesSection = bcd.v1.InstancesSection.$Properties;

/** The reason an instance attaching a volume the section does not list fails with. */
export const VOLUME_UNLISTED = "volume-unlisted";
/** The reason an instance with volumes fails with on a host that keeps none, or a runtime that attaches none. */
export const VOLUMES_UNSUPPORTED = "volumes-unsupported";

/** The serials of the section's volumes, by id (the first entry of an id stands). */
export function sectionSerials(section: InstancesSection | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of section?.volumes ?? []) if (!out.has(v.id ?? "")) out.set(v.id ?? "", v.serial ?? "");
  return out;
}

/** Instance `i`'s attachments in spec order, or the problem with them (a volume the section does not list, ...). */
export function attachmentsOf(
  i: InstanceSpec,
  serials: ReadonlyMap<string, string>,
): { readonly volumes: VolumeAttachment[] } | { readonly problem: string; readonly reason: string } {
  const id = i.id ?? "";
  const out: VolumeAttachment[] = [];
  const want = i.volumes ?? [];
  if (want.length > MAX_ATTACHMENTS) {
    return {
      reason: VOLUME_UNLISTED,
      problem: `instance ${id} attaches ${want.length} volumes; at most ${MAX_ATTACHMENTS}`,
    };
  }
  for (const a of want) {
    const vid = a.volume_id ?? "";
    const serial = serials.get(vid);
    if (serial === undefined) {
      return {
        reason: VOLUME_UNLISTED,
        problem: `instance ${id} attaches volume ${JSON.stringify(vid)}, which the instances section does not list`,
      };
    }
    if (out.some((o) => o.volumeId === vid)) {
      return { reason: VOLUME_UNLISTED, problem: `instance ${id} attaches volume ${vid} twice` };
    }
    out.push({ volumeId: vid, serial, readOnly: !!a.read_only });
  }
  return { volumes: out };
}

/**
 * Whether two attachment lists attach the same volumes the same way. Order is not compared: a define numbers the
 * devices in spec order, but a device never moves under a running guest, which finds each volume by its serial.
 */
export function sameVolumes(a: readonly VolumeAttachment[], b: readonly VolumeAttachment[]): boolean {
  return a.length === b.length &&
    a.every((x) => b.some((y) => x.volumeId === y.volumeId && x.serial === y.serial && x.readOnly === y.readOnly));
}
