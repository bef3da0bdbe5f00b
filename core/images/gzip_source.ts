/**
 * A bounded gzip decoder for the bundle safety kernel: the compressed bytes are fed to `DecompressionStream("gzip")`
 * in small slices under backpressure, so one step never inflates more than a slice can expand to, and the running
 * total of decompressed bytes is checked after every chunk. A truncated stream, a bad CRC or length, and trailing
 * bytes after the gzip member are refused as `bad-gzip` when the stream ends, even if the tar inside looked whole.
 *
 * @module
 */
import { UnsafeBundle } from "./errors.ts";

/** Compressed bytes per step: deflate expands at most ~1032:1, so one output chunk stays under ~17 MiB. */
const _SLICE = 16 * 1024;

/** A pull reader over the decompressed bytes with exact-length reads. */
export class GunzipReader {
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buf: Uint8Array = new Uint8Array(0);
  #off = 0;
  #total = 0;
  #cap: number;
  #done = false;

  /** Starts decoding `gz`; at most `cap` decompressed bytes are accepted (`stream-too-large` past it). */
  constructor(gz: Uint8Array, cap: number) {
    if (gz.length < 10 || gz[0] !== 0x1f || gz[1] !== 0x8b || gz[2] !== 8) {
      throw new UnsafeBundle("not-gzip", "only gzip-compressed tar is accepted");
    }
    this.#cap = cap;
    let pos = 0;
    const source = new ReadableStream<BufferSource>({
      pull(ctl) {
        if (pos >= gz.length) {
          ctl.close();
          return;
        }
        const end = Math.min(gz.length, pos + _SLICE);
        ctl.enqueue(gz.subarray(pos, end) as Uint8Array<ArrayBuffer>);
        pos = end;
      },
    }, { highWaterMark: 0 });
    this.#reader = source.pipeThrough(new DecompressionStream("gzip")).getReader();
  }

  /** Decompressed bytes delivered so far. */
  get total(): number {
    return this.#total;
  }

  async #fill(): Promise<boolean> {
    if (this.#done) return false;
    let r: ReadableStreamReadResult<Uint8Array>;
    try {
      r = await this.#reader.read();
    } catch (e) {
      this.#done = true;
      throw new UnsafeBundle("bad-gzip", `gzip stream refused: ${e instanceof Error ? e.message : String(e)}`, {
        cause: e,
      });
    }
    if (r.done) {
      this.#done = true;
      return false;
    }
    this.#total += r.value.length;
    if (this.#total > this.#cap) {
      await this.cancel();
      throw new UnsafeBundle("stream-too-large", `decompressed stream exceeds ${this.#cap} bytes`);
    }
    this.#buf = r.value;
    this.#off = 0;
    return true;
  }

  /**
   * Exactly `n` bytes (a view when they lie in one chunk, else a copy), or `null` at a clean end of stream before
   * the first byte; a stream that ends inside the `n` bytes throws `truncated`. Callers bound `n` beforehand.
   */
  async read(n: number): Promise<Uint8Array | null> {
    if (this.#buf.length - this.#off >= n) {
      const v = this.#buf.subarray(this.#off, this.#off + n);
      this.#off += n;
      return v;
    }
    if (this.#buf.length - this.#off === 0 && !(await this.#fill())) return n === 0 ? new Uint8Array(0) : null;
    if (this.#buf.length - this.#off >= n) return this.read(n);
    const out = new Uint8Array(n);
    let have = 0;
    while (have < n) {
      if (this.#buf.length - this.#off === 0 && !(await this.#fill())) {
        throw new UnsafeBundle("truncated", `tar stream ends ${n - have} bytes short`);
      }
      const take = Math.min(n - have, this.#buf.length - this.#off);
      out.set(this.#buf.subarray(this.#off, this.#off + take), have);
      this.#off += take;
      have += take;
    }
    return out;
  }

  /** Skips `n` bytes without keeping them; a stream that ends first throws `truncated`. */
  async skip(n: number): Promise<void> {
    let left = n;
    while (left > 0) {
      if (this.#buf.length - this.#off === 0 && !(await this.#fill())) {
        throw new UnsafeBundle("truncated", `tar stream ends ${left} bytes short`);
      }
      const take = Math.min(left, this.#buf.length - this.#off);
      this.#off += take;
      left -= take;
    }
  }

  /** Reads to the end of the stream (which verifies the gzip CRC and length); any non-zero byte is `bad-header`. */
  async drainZeros(): Promise<void> {
    for (;;) {
      const rest = this.#buf.subarray(this.#off);
      for (let i = 0; i < rest.length; i++) {
        if (rest[i] !== 0) {
          await this.cancel();
          throw new UnsafeBundle("bad-header", "non-zero bytes after the end-of-archive marker");
        }
      }
      this.#off = this.#buf.length;
      if (!(await this.#fill())) return;
    }
  }

  /** Stops decoding (after a refusal). */
  async cancel(): Promise<void> {
    this.#done = true;
    try {
      await this.#reader.cancel();
    } catch (e) {
      // The stream already errored; there is nothing left to stop.
      if (!(e instanceof Error)) throw e;
    }
  }
}
