/**
 * The volume grammar (000 §Persistent volumes, "The store"): an id is 1 to 80 of `[A-Za-z0-9_-]`, a serial 1 to 20 of
 * `[a-z0-9-]`, and a size a positive multiple of 512 bytes. An attachment names a volume by id and says whether it is
 * read-only. Both the node (before it creates a file) and the helper (before it names a file in a domain) check them.
 *
 * @module
 */

/** A volume id: it names `<data dir>/volumes/<id>.raw`. */
export const VOLUME_ID = /^[A-Za-z0-9_-]{1,80}$/;
/** A volume serial: the guest finds the disk at `/dev/disk/by-id/virtio-<serial>`. */
export const VOLUME_SERIAL = /^[a-z0-9-]{1,20}$/;
/** Volume sizes are whole 512-byte sectors. */
export const SECTOR = 512;
/** The most volumes one instance attaches: `vdb` to `vdy` (`vdz` is the identity rebind disk's). */
export const MAX_ATTACHMENTS = 24;

/** `InstancesSection.volumes[]`, checked. */
export interface VolumeSpec {
  readonly id: string;
  readonly serial: string;
  readonly sizeBytes: number;
}

/** One of `InstanceSpec.volumes`, with the serial of the volume it names. */
export interface VolumeAttachment {
  readonly volumeId: string;
  readonly serial: string;
  readonly readOnly: boolean;
}

/** What is wrong with a volume spec, or `undefined`; the message names the field and the value. */
export function volumeSpecProblem(v: VolumeSpec): string | undefined {
  if (!VOLUME_ID.test(v.id)) return `volume id ${JSON.stringify(v.id)} is not 1 to 80 of [A-Za-z0-9_-]`;
  if (!VOLUME_SERIAL.test(v.serial)) {
    return `volume ${v.id}: serial ${JSON.stringify(v.serial)} is not 1 to 20 of [a-z0-9-]`;
  }
  if (!Number.isSafeInteger(v.sizeBytes) || v.sizeBytes < SECTOR || v.sizeBytes % SECTOR !== 0) {
    return `volume ${v.id}: size ${v.sizeBytes} is not a positive multiple of ${SECTOR} bytes`;
  }
  return undefined;
}

/**
 * The guest device of the `n`-th attachment (0-based): `vdb` onward after the root disk `vda`, in spec order.
 * @example attachmentDev(0) // "vdb"
 */
export function attachmentDev(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0 || n >= MAX_ATTACHMENTS) {
    throw new RangeError(`attachment ${n} is not 0 to ${MAX_ATTACHMENTS - 1}`);
  }
  return `vd${String.fromCharCode("b".charCodeAt(0) + n)}`;
}

/** The guest's stable name of a volume's disk. */
export function byIdPath(serial: string): string {
  return `/dev/disk/by-id/virtio-${serial}`;
}
