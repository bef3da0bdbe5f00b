/**
 * Splits a byte stream into protocol lines under a cap. A line longer than the cap is refused as soon as the cap
 * is passed and the rest of it is discarded up to its newline, so a peer can never make the reader buffer a long
 * line whole. Each line is decoded as strict UTF-8.
 *
 * @module
 */
import { TurnsProtocolError } from "./errors.ts";

/** The default line cap in bytes (the newline not counted). The seed names none; 64 KiB holds any sane Secrets. */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024;

/** What the splitter yields: a complete line (without its newline) or a refusal. */
export type LineEvent = { readonly line: string } | { readonly refused: TurnsProtocolError };

/** A push-based line splitter: feed chunks, get lines and refusals in order. */
export class LineSplitter {
  readonly #max: number;
  #parts: Uint8Array[] = [];
  #size = 0;
  #discarding = false;
  readonly #utf8 = new TextDecoder("utf-8", { fatal: true });

  /** `maxLineBytes` bounds one line, the newline not counted. */
  constructor(maxLineBytes: number = DEFAULT_MAX_LINE_BYTES) {
    if (!Number.isSafeInteger(maxLineBytes) || maxLineBytes < 1) {
      throw new RangeError(`maxLineBytes must be a positive integer, got ${maxLineBytes}`);
    }
    this.#max = maxLineBytes;
  }

  /** Feeds one chunk; returns the lines it completed and any refusals, in stream order. */
  push(chunk: Uint8Array): LineEvent[] {
    const out: LineEvent[] = [];
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl === -1 ? chunk.length : nl;
      if (!this.#discarding) {
        const piece = chunk.subarray(start, end);
        if (this.#size + piece.length > this.#max) {
          out.push({
            refused: new TurnsProtocolError("line-too-long", `line exceeds ${this.#max} bytes; discarded`),
          });
          this.#parts = [];
          this.#size = 0;
          this.#discarding = true;
        } else if (piece.length > 0) {
          this.#parts.push(piece.slice());
          this.#size += piece.length;
        }
      }
      if (nl === -1) break;
      if (this.#discarding) this.#discarding = false;
      else out.push(this.#takeLine());
      start = nl + 1;
    }
    return out;
  }

  /** Ends the stream: a partial line left over is refused as `truncated-line`. */
  finish(): LineEvent[] {
    const partial = this.#size > 0 && !this.#discarding;
    this.#parts = [];
    this.#size = 0;
    this.#discarding = false;
    return partial ? [{ refused: new TurnsProtocolError("truncated-line", "stream ended inside a line") }] : [];
  }

  #takeLine(): LineEvent {
    const bytes = this.#parts.length === 1 ? this.#parts[0]! : _concat(this.#parts, this.#size);
    this.#parts = [];
    this.#size = 0;
    try {
      return { line: this.#utf8.decode(bytes) };
    } catch (e) {
      return { refused: new TurnsProtocolError("bad-utf8", "line is not valid UTF-8", undefined, { cause: e }) };
    }
  }
}

function _concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Reads `stream` to its end, yielding lines and refusals; releases the reader when the consumer stops early. */
export async function* readLines(
  stream: ReadableStream<Uint8Array>,
  maxLineBytes: number = DEFAULT_MAX_LINE_BYTES,
): AsyncGenerator<LineEvent> {
  const splitter = new LineSplitter(maxLineBytes);
  const reader = stream.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield* splitter.push(value);
    }
    yield* splitter.finish();
  } finally {
    reader.releaseLock();
  }
}
