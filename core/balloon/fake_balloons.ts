/**
 * Test doubles of the balloon loop's ports: {@link FakeBalloons}, guests' balloons in memory (a guest without a
 * balloon device answers {@link NoBalloon}), and {@link ScriptedPressure}, host readings a test sets before each pass.
 *
 * @module
 */
import type { HostPressure } from "./policy.ts";
import { type BalloonPort, type BalloonReading, NoBalloon } from "./port.ts";
import type { MemoryPressureSource } from "./pressure.ts";

/** Balloons in memory. */
export class FakeBalloons implements BalloonPort {
  readonly guests = new Map<string, { memoryBytes: number; currentBytes: number; usedBytes: number | null }>();
  /** Guests without a balloon device. */
  readonly without = new Set<string>();
  readonly calls: string[] = [];

  add(id: string, memoryBytes: number, usedBytes: number | null): this {
    this.guests.set(id, { memoryBytes, currentBytes: memoryBytes, usedBytes });
    return this;
  }

  readBalloon(id: string): Promise<BalloonReading> {
    this.calls.push(`read ${id}`);
    if (this.without.has(id)) return Promise.reject(new NoBalloon(`${id} has no balloon`));
    const g = this.guests.get(id);
    if (!g) return Promise.reject(new Error(`no guest ${id}`));
    return Promise.resolve({ currentBytes: g.currentBytes, usedBytes: g.usedBytes });
  }

  setBalloon(id: string, bytes: number): Promise<void> {
    this.calls.push(`set ${id} ${bytes}`);
    if (this.without.has(id)) return Promise.reject(new NoBalloon(`${id} has no balloon`));
    const g = this.guests.get(id);
    if (!g) return Promise.reject(new Error(`no guest ${id}`));
    if (bytes < 1024 || bytes > g.memoryBytes || bytes % 1024 !== 0) {
      return Promise.reject(new RangeError(`${id}: ${bytes} is not 1 KiB to its memory in whole KiB`));
    }
    g.currentBytes = bytes;
    return Promise.resolve();
  }
}

/** Host readings the test sets; `fail` makes the next reads throw. */
export class ScriptedPressure implements MemoryPressureSource {
  fail: Error | undefined;
  reads = 0;
  constructor(public now: HostPressure) {}
  read(): Promise<HostPressure> {
    this.reads++;
    return this.fail ? Promise.reject(this.fail) : Promise.resolve(this.now);
  }
}
