/**
 * The daemon's recent logs, kept in memory for `logs.collect`: a bounded ring of pino JSON lines that a logger writes
 * to beside stderr (`tee`). Oldest lines go first once the byte bound is reached.
 *
 * @module
 */
import { type Clock, realClock } from "../../clock.ts";

/** The default bound: 8 MiB of recent log lines. */
export const DEFAULT_LOG_RING_BYTES = 8 * 1024 * 1024;

/** A bounded ring of log lines. */
export class LogRing {
  #lines: { at: number; line: string }[] = [];
  #head = 0;
  #bytes = 0;

  /** `clock`: stamps each line with its wall time, for `since` (default the real clock). */
  constructor(readonly maxBytes = DEFAULT_LOG_RING_BYTES, private readonly clock: Pick<Clock, "now"> = realClock) {}

  /** Appends one line (a pino destination's `write`). */
  write(line: string): void {
    const l = line.endsWith("\n") ? line : line + "\n";
    if (l.length > this.maxBytes) return;
    this.#lines.push({ at: this.clock.now(), line: l });
    this.#bytes += l.length;
    while (this.#bytes > this.maxBytes) {
      this.#bytes -= this.#lines[this.#head]!.line.length;
      this.#head++;
    }
    if (this.#head > 1024 && this.#head * 2 > this.#lines.length) {
      this.#lines = this.#lines.slice(this.#head);
      this.#head = 0;
    }
  }

  /** A destination that writes to the ring and to `next` (stderr). */
  tee(next: { write(line: string): void }): { write(line: string): void } {
    return { write: (line) => (this.write(line), next.write(line)) };
  }

  /** The lines written at or after `sinceMs`, newest last, at most `maxBytes` (the newest kept). */
  since(sinceMs: number, maxBytes: number): { text: string; truncated: boolean } {
    const out: string[] = [];
    let bytes = 0;
    let truncated = false;
    for (let i = this.#lines.length - 1; i >= this.#head; i--) {
      const e = this.#lines[i]!;
      if (e.at < sinceMs) break;
      if (bytes + e.line.length > maxBytes) {
        truncated = true;
        break;
      }
      bytes += e.line.length;
      out.push(e.line);
    }
    return { text: out.reverse().join(""), truncated };
  }
}
