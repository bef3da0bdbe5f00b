/**
 * The volume store port (000 §Persistent volumes, "The store"): each volume is a sparse raw file
 * `<data dir>/volumes/<id>.raw` (0600) with its serial beside it in `<id>.json`. Raw rather than qcow2: its format is
 * fixed and never probed, it has no header a VMM could rewrite, and it grows by truncation. The real store is
 * `runtimes/volumes/file_store.ts`; {@link MemoryVolumeStore} is the fake; one contract suite runs against both
 * (`store_contract_testing.ts`).
 *
 * @module
 */
import type { FsFigures } from "./space.ts";

/** A volume as the store holds it. */
export interface StoredVolume {
  readonly id: string;
  /** `""` when its `<id>.json` is missing or unreadable (a crash between the two writes). */
  readonly serial: string;
  readonly sizeBytes: number;
  /** Bytes its file has allocated (`st_blocks` × 512). */
  readonly allocatedBytes: number;
}

/** A store refusal no retry fixes: `volume-shrink`. */
export class VolumeRefused extends Error {
  override name = "VolumeRefused";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** The store. Ids passed in are checked by the caller (`VOLUME_ID`); the store refuses any other all the same. */
export interface VolumeStore {
  /** Every volume, by id order. */
  list(): Promise<StoredVolume[]>;
  /** The data directory filesystem's figures. */
  fs(): Promise<FsFigures>;
  /** Creates a sparse volume of `sizeBytes` (its file written under a temporary name, then renamed). */
  create(id: string, serial: string, sizeBytes: number): Promise<void>;
  /** Grows a volume by truncation; a smaller size is {@link VolumeRefused} `volume-shrink`, the same size nothing. */
  grow(id: string, sizeBytes: number): Promise<void>;
  /** Records a new serial for an existing volume. */
  setSerial(id: string, serial: string): Promise<void>;
  /** Punches the volume's blocks out, then unlinks it and its `<id>.json`; a missing one is nothing to do. */
  destroy(id: string): Promise<void>;
}

/** The refusal of a shrink, in one place for both stores. */
export function shrinkRefusal(id: string, have: number, want: number): VolumeRefused {
  return new VolumeRefused("volume-shrink", `volume ${id} is ${have} bytes; ${want} would shrink it (never shrunk)`);
}

/** An in-memory store: volumes in a map, the filesystem's figures settable, every call recorded. */
export class MemoryVolumeStore implements VolumeStore {
  readonly volumes = new Map<string, { serial: string; sizeBytes: number; allocatedBytes: number }>();
  readonly calls: string[] = [];
  figures: FsFigures;
  /** Punched-out volumes, in order (destroy punches before it unlinks). */
  readonly punched: string[] = [];

  constructor(figures: FsFigures = { totalBytes: 1024 ** 4, availableBytes: 512 * 1024 ** 3 }) {
    this.figures = figures;
  }

  list(): Promise<StoredVolume[]> {
    return Promise.resolve(
      [...this.volumes].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0).map(([id, v]) => ({ id, ...v })),
    );
  }

  fs(): Promise<FsFigures> {
    return Promise.resolve(this.figures);
  }

  create(id: string, serial: string, sizeBytes: number): Promise<void> {
    this.calls.push(`create ${id} ${sizeBytes}`);
    if (this.volumes.has(id)) return Promise.reject(new Deno.errors.AlreadyExists(`volume ${id} exists`));
    this.volumes.set(id, { serial, sizeBytes, allocatedBytes: 0 });
    return Promise.resolve();
  }

  grow(id: string, sizeBytes: number): Promise<void> {
    const v = this.volumes.get(id);
    if (!v) return Promise.reject(new Deno.errors.NotFound(`volume ${id} does not exist`));
    if (sizeBytes < v.sizeBytes) return Promise.reject(shrinkRefusal(id, v.sizeBytes, sizeBytes));
    if (sizeBytes === v.sizeBytes) return Promise.resolve();
    this.calls.push(`grow ${id} ${sizeBytes}`);
    v.sizeBytes = sizeBytes;
    return Promise.resolve();
  }

  setSerial(id: string, serial: string): Promise<void> {
    const v = this.volumes.get(id);
    if (!v) return Promise.reject(new Deno.errors.NotFound(`volume ${id} does not exist`));
    v.serial = serial;
    return Promise.resolve();
  }

  destroy(id: string): Promise<void> {
    this.calls.push(`destroy ${id}`);
    if (this.volumes.has(id)) this.punched.push(id);
    this.volumes.delete(id);
    return Promise.resolve();
  }

  /** A tenant wrote `bytes` into the volume (its allocation grows, up to its size). */
  write(id: string, bytes: number): void {
    const v = this.volumes.get(id)!;
    v.allocatedBytes = Math.min(v.sizeBytes, v.allocatedBytes + bytes);
  }
}
