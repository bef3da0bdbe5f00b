/**
 * The volumes a host keeps (000 §Persistent volumes): each pass brings the store to the `instances` section's
 * `volumes` before any instance is defined ({@link VolumeKeeper.prepare}: missing ones created, grown ones grown,
 * never shrunk, each new volume or growth admitted by the space rule), and after the pass destroys what the section
 * no longer lists and no instance attaches or holds open ({@link VolumeKeeper.destroyUnlisted}). It also keeps the
 * open-volume tracker ({@link OpenVolumes}) and the last `StatusReport.volume_storage`.
 *
 * A refused volume keeps its size and the reason stands for the instances that attach it: `invalid-volume` (the
 * grammar, or an id listed twice: the first entry stands), `volume-shrink`, `volume-space` (the seed's message).
 *
 * @module
 */
import type { Logger } from "../log/mod.ts";
import { type VolumeSpec, volumeSpecProblem } from "./grammar.ts";
import { OpenVolumes } from "./open_volumes.ts";
import { spaceRefusal, unwrittenBytes, type VolumeStorage, volumeStorage } from "./space.ts";
import { shrinkRefusal, type StoredVolume, type VolumeStore } from "./store.ts";

/** The reasons a volume is refused with. */
export const VOLUME_REASONS = {
  invalid: "invalid-volume",
  shrink: "volume-shrink",
  space: "volume-space",
} as const;

/** A volume the pass refused: why, and whether its file exists (an older size stands). */
export interface VolumeRefusal {
  readonly reason: string;
  readonly message: string;
  readonly exists: boolean;
}

/** What {@link VolumeKeeper.prepare} did. */
export interface VolumeVerdicts {
  /** The section's volumes that stand, by id (their serials: what attachments name). */
  readonly listed: ReadonlyMap<string, VolumeSpec>;
  readonly refused: ReadonlyMap<string, VolumeRefusal>;
  /** Volumes grown this pass, with their new size: resized live in every guest that holds them. */
  readonly grown: ReadonlyMap<string, number>;
  readonly created: readonly string[];
}

/** `InstancesSection.volumes[]` as the wire decodes it. */
export interface RawVolumeSpec {
  readonly id?: string | null;
  readonly serial?: string | null;
  readonly size_bytes?: number | { toNumber(): number } | null;
}

function _size(v: RawVolumeSpec["size_bytes"]): number {
  if (v === null || v === undefined) return 0;
  return typeof v === "number" ? v : v.toNumber();
}

/** The keeper over one store. */
export class VolumeKeeper {
  readonly open = new OpenVolumes();
  readonly #store: VolumeStore;
  readonly #log: Logger | undefined;
  #listed = new Map<string, VolumeSpec>();
  /** Ids the last pass refused: an existing one is kept (a bad spec never destroys data). */
  #refused = new Set<string>();
  #storage: VolumeStorage | undefined;

  constructor(store: VolumeStore, log?: Logger) {
    this.#store = store;
    this.#log = log;
  }

  /** The last `StatusReport.volume_storage` (as of the last pass), `undefined` before the first. */
  storage(): VolumeStorage | undefined {
    return this.#storage;
  }

  /** The section's volumes that stood at the last pass, by id. */
  get listed(): ReadonlyMap<string, VolumeSpec> {
    return this.#listed;
  }

  /**
   * Brings the store to `section` in its order: creates what is missing and grows what grew, each admitted by the
   * space rule against the figures as they stand after the ones before it; refuses a shrink, a bad spec and an id
   * listed twice. Store failures other than a refusal are thrown (the pass retries).
   */
  async prepare(section: readonly RawVolumeSpec[]): Promise<VolumeVerdicts> {
    const refused = new Map<string, VolumeRefusal>();
    const listed = new Map<string, VolumeSpec>();
    const grown = new Map<string, number>();
    const created: string[] = [];
    const stored = new Map((await this.#store.list()).map((v) => [v.id, v]));
    let s = volumeStorage(await this.#store.fs(), [...stored.values()]);
    const add = (bytes: number) =>
      s = { ...s, committedBytes: s.committedBytes + bytes, outstandingBytes: s.outstandingBytes + bytes };
    for (const raw of section) {
      const v: VolumeSpec = { id: raw.id ?? "", serial: raw.serial ?? "", sizeBytes: _size(raw.size_bytes) };
      const have = stored.get(v.id);
      const bad = volumeSpecProblem(v);
      if (bad || listed.has(v.id) || refused.has(v.id)) {
        const message = bad ?? `volume ${v.id} is listed twice; the first entry stands`;
        if (!listed.has(v.id)) refused.set(v.id, { reason: VOLUME_REASONS.invalid, message, exists: !!have });
        continue;
      }
      if (have && v.sizeBytes < have.sizeBytes) {
        const e = shrinkRefusal(v.id, have.sizeBytes, v.sizeBytes);
        refused.set(v.id, { reason: VOLUME_REASONS.shrink, message: e.message, exists: true });
        listed.set(v.id, { ...v, sizeBytes: have.sizeBytes });
        continue;
      }
      const need = v.sizeBytes - (have?.sizeBytes ?? 0);
      if (need > 0) {
        const no = spaceRefusal(v.id, need, s);
        if (no) {
          refused.set(v.id, { reason: VOLUME_REASONS.space, message: no, exists: !!have });
          if (have) listed.set(v.id, { ...v, sizeBytes: have.sizeBytes });
          continue;
        }
        if (have) {
          await this.#store.grow(v.id, v.sizeBytes);
          grown.set(v.id, v.sizeBytes);
          this.#log?.info({ volume: v.id, bytes: v.sizeBytes }, "volume grown");
        } else {
          await this.#store.create(v.id, v.serial, v.sizeBytes);
          created.push(v.id);
          this.#log?.info({ volume: v.id, bytes: v.sizeBytes }, "volume created");
        }
        add(need);
      }
      if (have && have.serial !== v.serial) await this.#store.setSerial(v.id, v.serial);
      listed.set(v.id, v);
    }
    this.#listed = listed;
    this.#refused = new Set(refused.keys());
    this.#storage = s;
    return { listed, refused, grown, created };
  }

  /**
   * Destroys every stored volume the last {@link prepare} neither listed nor refused, that no instance in `attached` names and no
   * instance holds open: its blocks punched out, then its files unlinked. Answers the ids destroyed, and refreshes
   * the storage figures.
   */
  async destroyUnlisted(attached: ReadonlySet<string>): Promise<string[]> {
    const out: string[] = [];
    let stored: StoredVolume[] = await this.#store.list();
    for (const v of stored) {
      if (this.#listed.has(v.id) || this.#refused.has(v.id) || attached.has(v.id) || this.open.isOpen(v.id)) continue;
      await this.#store.destroy(v.id);
      out.push(v.id);
      this.#log?.info({ volume: v.id, bytes: v.sizeBytes, unwritten: unwrittenBytes(v) }, "volume destroyed");
    }
    if (out.length > 0) stored = await this.#store.list();
    this.#storage = volumeStorage(await this.#store.fs(), stored);
    return out;
  }
}
