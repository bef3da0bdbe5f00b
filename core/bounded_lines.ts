/**
 * Newline-delimited lines from a byte stream, each at most a cap: a line that passes the cap is reported as soon as
 * it does (never buffered past the cap) and ends the stream, since nothing after it can be framed with trust.
 *
 * What a partial line keeps is a copy of its own bytes, never a view on the chunk it came in: a chunk is often a
 * window on a reader's 64 KiB buffer, and a line sent one byte per chunk would otherwise pin one such buffer per byte
 * (2,000 bytes held ~98 MiB in the root helper). So the bytes retained for a partial line are at most the cap, and
 * {@link LineReaderState.partialBytes} says how many there are right now.
 *
 * @module
 */

/** One event of {@link boundedLines}. */
export type LineEvent =
  | { readonly kind: "line"; readonly line: string }
  | { readonly kind: "too-long"; readonly max: number }
  | { readonly kind: "not-utf8" };

/** What a {@link boundedLines} iteration holds between lines (the helper's read deadline watches it). */
export interface LineReaderState {
  /** Bytes of a line begun but not yet ended, all copied out of their chunks. */
  partialBytes: number;
}

/** A growable copy buffer for one partial line: doubles, never past `max`. */
class _Partial {
  #buf = new Uint8Array(0);
  size = 0;
  append(bytes: Uint8Array, max: number): void {
    const need = this.size + bytes.length;
    if (need > this.#buf.length) {
      const grown = new Uint8Array(Math.min(max, Math.max(need, 256, this.#buf.length * 2)));
      grown.set(this.#buf.subarray(0, this.size));
      this.#buf = grown;
    }
    this.#buf.set(bytes, this.size);
    this.size = need;
  }
  /** The line so far plus `tail` (a view on the chunk: decoded at once, not kept), and resets. */
  take(tail: Uint8Array): Uint8Array {
    if (this.size === 0) return tail;
    this.append(tail, this.size + tail.length);
    const out = this.#buf.subarray(0, this.size);
    this.#buf = new Uint8Array(0);
    this.size = 0;
    return out;
  }
}

/**
 * Yields the lines of `source` (without their `\n`), each decoded as UTF-8: a stream, or a reader such as a `Deno.Conn`
 * read directly (into one 64 KiB buffer, with no `ReadableStream` in between: a process that reads a connection this
 * way never loads Deno's web streams, ~8 ms of the node's start, issue 24). A line longer than `maxBytes` yields
 * `too-long` and ends the iteration; a line that is not UTF-8 yields `not-utf8` and the next line follows. Bytes after
 * the last newline at the end of the stream are dropped (a peer that went away mid-line).
 */
export async function* boundedLines(
  source: ReadableStream<Uint8Array> | ByteReader,
  maxBytes: number,
  state: LineReaderState = { partialBytes: 0 },
): AsyncGenerator<LineEvent> {
  const next = _chunks(source);
  const dec = new TextDecoder("utf-8", { fatal: true });
  const partial = new _Partial();
  state.partialBytes = 0;
  try {
    for (;;) {
      const { value, done } = await next.read();
      if (done) return;
      let chunk = value;
      while (chunk.length > 0) {
        const nl = chunk.indexOf(10);
        const take = nl < 0 ? chunk.length : nl;
        if (partial.size + take > maxBytes) {
          yield { kind: "too-long", max: maxBytes };
          return;
        }
        if (nl < 0) {
          partial.append(chunk, maxBytes); // a copy: the chunk's buffer is not kept
          state.partialBytes = partial.size;
          break;
        }
        const bytes = partial.take(chunk.subarray(0, nl));
        state.partialBytes = 0;
        chunk = chunk.subarray(nl + 1);
        let line: string;
        try {
          line = dec.decode(bytes);
        } catch (e) {
          if (!(e instanceof TypeError)) throw e;
          yield { kind: "not-utf8" };
          continue;
        }
        yield { kind: "line", line };
      }
    }
  } finally {
    next.release();
  }
}

/** Something with `Deno.Conn`'s `read`: the bytes read into `p`, or null at the end. */
export interface ByteReader {
  read(p: Uint8Array): Promise<number | null>;
}

/**
 * Chunks of `source`: a stream's own reads (as they are: a chunk is taken in the same turn its read resolves, before
 * the stream can pull the next into a buffer its source reuses), or a reader's reads into one buffer (each a view,
 * used before the next read).
 */
function _chunks(source: ReadableStream<Uint8Array> | ByteReader): {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  release(): void;
} {
  // Not `instanceof ReadableStream`: reading that global loads Deno's streams, which a reader never needs.
  if ("getReader" in source) {
    const reader = source.getReader();
    return { read: () => reader.read(), release: () => reader.releaseLock() };
  }
  const buf = new Uint8Array(64 * 1024);
  return {
    read: async () => {
      const n = await source.read(buf);
      return n === null ? { done: true, value: undefined } : { done: false, value: buf.subarray(0, n) };
    },
    release: () => {},
  };
}
