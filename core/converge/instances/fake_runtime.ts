/**
 * An in-memory {@link InstanceRuntime} for tests: domains in a map, and a listing that can be made to fail.
 *
 * @module
 */
import { type Domain, type DomainRecord, type DomainState, type InstanceRuntime, RuntimeRefused } from "./runtime.ts";
import type { VolumeAttachment } from "../../volumes/grammar.ts";
import { type BalloonReading, NoBalloon } from "../../balloon/port.ts";

/** An in-memory runtime; set `listError` to make `list()` fail with it. */
export class MemoryRuntime implements InstanceRuntime {
  readonly domains = new Map<string, { state: DomainState; record: DomainRecord | undefined }>();
  listError: Error | undefined;
  readonly calls: string[] = [];

  constructor(readonly name: string) {}

  list(): Promise<Domain[]> {
    if (this.listError) return Promise.reject(this.listError);
    return Promise.resolve([...this.domains].map(([id, d]) => ({ id, state: d.state, record: d.record })));
  }

  define(record: DomainRecord): Promise<void> {
    this.calls.push(`define ${record.id}`);
    this.domains.set(record.id, { state: "stopped", record });
    this.disks.set(record.id, record.launch?.diskBytes ?? 0);
    return Promise.resolve();
  }

  start(id: string, paused: boolean): Promise<void> {
    return this.#set(id, paused ? "paused" : "running", "start");
  }

  pause(id: string): Promise<void> {
    return this.#set(id, "paused", "pause");
  }

  resume(id: string): Promise<void> {
    return this.#set(id, "running", "resume");
  }

  stop(id: string): Promise<void> {
    return this.#set(id, "stopped", "stop");
  }

  /** Root disk sizes, by instance (set at define from the launch spec, moved by grow). */
  readonly disks = new Map<string, number>();

  grow(id: string, bytes: number): Promise<void> {
    const have = this.disks.get(id) ?? 0;
    if (bytes === have) return Promise.resolve();
    this.calls.push(`grow ${id} ${bytes} ${this.domains.get(id)?.state}`);
    if (bytes < have) {
      return Promise.reject(
        new RuntimeRefused("disk-shrink", `${id}: the disk is ${have} bytes; ${bytes} would shrink it`),
      );
    }
    this.disks.set(id, bytes);
    return Promise.resolve();
  }

  setVolumes(id: string, volumes: readonly VolumeAttachment[]): Promise<void> {
    const d = this.domains.get(id);
    if (!d?.record) return Promise.reject(new Error(`no domain ${id}`));
    this.calls.push(`volumes ${id} ${d.state} [${volumes.map((v) => v.volumeId).join(",")}]`);
    d.record = { ...d.record, volumes: [...volumes] };
    return Promise.resolve();
  }

  growVolume(id: string, volumeId: string, bytes: number): Promise<void> {
    this.calls.push(`growVolume ${id} ${volumeId} ${bytes}`);
    return Promise.resolve();
  }

  /** Balloon sizes of domains defined with one (`placement.balloon`), bytes; reset to the memory at each start. */
  readonly balloons = new Map<string, number>();

  readBalloon(id: string): Promise<BalloonReading> {
    const d = this.domains.get(id);
    if (!d?.record?.launch?.placement?.balloon) return Promise.reject(new NoBalloon(`${id} has no balloon`));
    const current = this.balloons.get(id) ?? d.record.memoryBytes;
    return Promise.resolve({ currentBytes: current, usedBytes: 0 });
  }

  setBalloon(id: string, bytes: number): Promise<void> {
    this.calls.push(`setBalloon ${id} ${bytes}`);
    const d = this.domains.get(id);
    if (!d?.record?.launch?.placement?.balloon) return Promise.reject(new NoBalloon(`${id} has no balloon`));
    this.balloons.set(id, bytes);
    return Promise.resolve();
  }

  /** Instances whose guest answers a rebind; the others are silent. Each try is recorded in {@link rebinds}. */
  readonly answering = new Set<string>();
  readonly rebinds: { id: string; nonce: string; image: Uint8Array }[] = [];

  rebind(id: string, image: Uint8Array, nonce: string): Promise<boolean> {
    this.calls.push(`rebind ${id}`);
    this.rebinds.push({ id, nonce, image: image.slice() });
    return Promise.resolve(this.answering.has(id));
  }

  delete(id: string): Promise<void> {
    this.calls.push(`delete ${id}`);
    this.domains.delete(id);
    return Promise.resolve();
  }

  #set(id: string, state: DomainState, op: string): Promise<void> {
    this.calls.push(`${op} ${id}`);
    const d = this.domains.get(id);
    if (!d) return Promise.reject(new Error(`no domain ${id}`));
    if (op === "start") this.balloons.delete(id);
    d.state = state;
    return Promise.resolve();
  }
}
