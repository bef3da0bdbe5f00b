/**
 * Sparse, but never overcommitted (000 §Persistent volumes, 851016e): a new volume, or a growth, must fit in the data
 * directory filesystem's available space (`statfs` `Bavail`) less a reserve (5% of the filesystem, at least 2 GiB)
 * less every volume's unwritten space. One that does not is refused with the seed's message
 * ({@link spaceRefusal}), keeps its size, and the instances that attach it report why.
 *
 * The report's five fields (`StatusReport.volume_storage`, 37d6d6d, b8e7271) come from the same figures
 * ({@link volumeStorage}).
 *
 * Judgement calls the seed leaves open: the MiB figures of the message are whole MiB, the needed bytes rounded up
 * and the others rounded down (the message never understates the shortfall); a volume's unwritten space is its size
 * less the bytes its file has allocated (`st_blocks` × 512), never below zero.
 *
 * @module
 */

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** The reserve's floor: 2 GiB. */
export const RESERVE_FLOOR_BYTES = 2 * GiB;

/** The data directory filesystem's figures. */
export interface FsFigures {
  readonly totalBytes: number;
  /** `statfs` `Bavail` × the fragment size. */
  readonly availableBytes: number;
}

/** A stored volume's figures. */
export interface VolumeFigures {
  readonly sizeBytes: number;
  /** Bytes the file has allocated on the filesystem. */
  readonly allocatedBytes: number;
}

/** `StatusReport.volume_storage`. */
export interface VolumeStorage {
  /** The data directory's filesystem. */
  readonly totalBytes: number;
  /** Its `statfs` `Bavail`. */
  readonly availableBytes: number;
  /** Kept from volumes: 5% of the total, at least 2 GiB. */
  readonly reservedBytes: number;
  /** The sum of every volume's size. */
  readonly committedBytes: number;
  /** The sum of every volume's unwritten (sparse) space. */
  readonly outstandingBytes: number;
}

/** The reserve of a filesystem of `totalBytes`: 5% of it, at least 2 GiB. */
export function reserveBytes(totalBytes: number): number {
  return Math.max(Math.ceil(totalBytes * 0.05), RESERVE_FLOOR_BYTES);
}

/** A volume's unwritten space: its size less what its file allocated, never below zero. */
export function unwrittenBytes(v: VolumeFigures): number {
  return Math.max(0, v.sizeBytes - v.allocatedBytes);
}

/** The five fields of `StatusReport.volume_storage` for a filesystem and the volumes on it. */
export function volumeStorage(fs: FsFigures, volumes: readonly VolumeFigures[]): VolumeStorage {
  let committed = 0;
  let outstanding = 0;
  for (const v of volumes) {
    committed += v.sizeBytes;
    outstanding += unwrittenBytes(v);
  }
  return {
    totalBytes: fs.totalBytes,
    availableBytes: fs.availableBytes,
    reservedBytes: reserveBytes(fs.totalBytes),
    committedBytes: committed,
    outstandingBytes: outstanding,
  };
}

/** What can still be promised to volumes: available less reserved less outstanding (may be negative). */
export function promisableBytes(s: VolumeStorage): number {
  return s.availableBytes - s.reservedBytes - s.outstandingBytes;
}

/**
 * The seed's refusal when `neededBytes` more of unwritten space (a new volume's size, or a growth's increase) does not
 * fit; `undefined` when it does.
 * @example
 * spaceRefusal("data", 4 * GiB, storage)
 * // "volume data: 4096 MiB needed, 1024 MiB can still be promised to volumes on this host (10240 MiB free, ...)"
 */
export function spaceRefusal(id: string, neededBytes: number, s: VolumeStorage): string | undefined {
  const can = promisableBytes(s);
  if (neededBytes <= can) return undefined;
  const down = (b: number) => Math.floor(b / MiB);
  return `volume ${id}: ${Math.ceil(neededBytes / MiB)} MiB needed, ${Math.max(0, down(can))} MiB can still be ` +
    `promised to volumes on this host (${down(s.availableBytes)} MiB free, ${down(s.reservedBytes)} MiB reserved, ` +
    `${down(s.outstandingBytes)} MiB promised to volumes' unwritten space)`;
}
