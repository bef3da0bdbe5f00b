/**
 * One writer (000 §Persistent volumes, 6b1480b): which instances have which volumes open, from the running and paused
 * domains and as a pass stops, deletes and starts them. An instance that attaches a volume beside a running or paused
 * writer, or as a writer beside readers, is refused ({@link OpenVolumes.conflict}); the first to open keeps it, so
 * with starts in spec order the first in spec order keeps it. A stop that failed leaves its volumes open, so it never
 * lets a second writer in.
 *
 * @module
 */

/** What an instance holds open. */
export interface OpenAttachment {
  readonly volumeId: string;
  readonly readOnly: boolean;
}

/** The seed's one-writer refusal reason. */
export const VOLUME_BUSY = "volume-busy";

/** The tracker. */
export class OpenVolumes {
  readonly #byInstance = new Map<string, readonly OpenAttachment[]>();

  /** Starts over from what runs now: each running or paused domain with the volumes it has attached. */
  reset(domains: Iterable<{ readonly id: string; readonly volumes: readonly OpenAttachment[] }>): void {
    this.#byInstance.clear();
    for (const d of domains) if (d.volumes.length > 0) this.#byInstance.set(d.id, [...d.volumes]);
  }

  /**
   * Why instance `id` may not open `wanted` beside what the others hold, or `undefined` when it may. What `id` holds
   * itself never conflicts.
   */
  conflict(id: string, wanted: readonly OpenAttachment[]): string | undefined {
    for (const w of wanted) {
      for (const [other, held] of this.#byInstance) {
        if (other === id) continue;
        const h = held.find((x) => x.volumeId === w.volumeId);
        if (!h) continue;
        if (!h.readOnly) {
          return `volume ${w.volumeId} is open read-write in instance ${other}; one writer per volume`;
        }
        if (!w.readOnly) {
          return `volume ${w.volumeId} is open read-only in instance ${other}; a writer needs it alone`;
        }
      }
    }
    return undefined;
  }

  /** Instance `id` now holds `volumes` open (replacing what it held). */
  open(id: string, volumes: readonly OpenAttachment[]): void {
    if (volumes.length === 0) this.#byInstance.delete(id);
    else this.#byInstance.set(id, [...volumes]);
  }

  /** Instance `id` stopped or went away: it holds nothing. */
  close(id: string): void {
    this.#byInstance.delete(id);
  }

  /** Whether any instance holds volume `volumeId` open. */
  isOpen(volumeId: string): boolean {
    for (const held of this.#byInstance.values()) if (held.some((h) => h.volumeId === volumeId)) return true;
    return false;
  }

  /** The instances holding volume `volumeId` open. */
  holders(volumeId: string): string[] {
    return [...this.#byInstance].filter(([, held]) => held.some((h) => h.volumeId === volumeId)).map(([id]) => id);
  }

  /** What instance `id` holds open. */
  heldBy(id: string): readonly OpenAttachment[] {
    return this.#byInstance.get(id) ?? [];
  }
}
