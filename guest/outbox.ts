/**
 * What waits for the stream to the host: whole messages in order, written by one writer that batches small
 * messages. The executions consult {@link Outbox.bytes} against the 1 MiB and 4 MiB limits.
 *
 * @module
 */
import type { Transport } from "./transport.ts";

/** The queue of messages for the host. */
export class Outbox {
  readonly #frames: Uint8Array[] = [];
  #bytes = 0;
  #writing = false;
  #failed: unknown = null;
  #drainWaiters: (() => void)[] = [];
  /** Called whenever bytes left the queue (the loop then takes another turn). */
  onDrain: () => void = () => {};

  constructor(readonly t: Transport, readonly batchBytes = 64 * 1024) {}

  /** Bytes queued, the message being written included. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The write failure, if the stream failed. */
  get failed(): unknown {
    return this.#failed;
  }

  /** Queues a whole message. */
  push(frame: Uint8Array): void {
    if (this.#failed) return;
    this.#frames.push(frame);
    this.#bytes += frame.length;
    if (!this.#writing) void this.#write();
  }

  /** Drops everything queued but a write in progress (a reset: the new epoch starts with a new message). */
  clear(): void {
    this.#frames.length = 0;
    this.#bytes = 0;
  }

  async #write(): Promise<void> {
    this.#writing = true;
    try {
      while (this.#frames.length > 0) {
        let batch: Uint8Array;
        if (this.#frames.length > 1 && this.#frames[0]!.length < this.batchBytes) {
          let n = 0;
          let k = 0;
          while (k < this.#frames.length && n + this.#frames[k]!.length <= this.batchBytes) {
            n += this.#frames[k++]!.length;
          }
          batch = new Uint8Array(n);
          let o = 0;
          for (const f of this.#frames.splice(0, k)) {
            batch.set(f, o);
            o += f.length;
          }
        } else {
          batch = this.#frames.shift()!;
        }
        await this.t.write(batch);
        this.#bytes = Math.max(0, this.#bytes - batch.length);
        this.onDrain();
      }
    } catch (e) {
      this.#failed = e;
      this.#frames.length = 0;
      this.#bytes = 0;
    } finally {
      this.#writing = false;
      const w = this.#drainWaiters;
      this.#drainWaiters = [];
      for (const f of w) f();
      this.onDrain();
    }
  }

  /** Resolves once everything queued was written (or the stream failed). */
  flush(): Promise<void> {
    if (!this.#writing && this.#frames.length === 0) return Promise.resolve();
    return new Promise((r) => this.#drainWaiters.push(r));
  }
}
