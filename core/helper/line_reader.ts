/**
 * Newline-delimited lines from a byte stream, each at most a cap: a line that passes the cap is reported as soon as
 * it does (never buffered past the cap) and ends the stream, since nothing after it can be framed with trust.
 *
 * @module
 */

/** One event of {@link boundedLines}. */
export type LineEvent =
  | { readonly kind: "line"; readonly line: string }
  | { readonly kind: "too-long"; readonly max: number }
  | { readonly kind: "not-utf8" };

function _concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Yields the lines of `stream` (without their `\n`), each decoded as UTF-8. A line longer than `maxBytes` yields
 * `too-long` and ends the iteration; a line that is not UTF-8 yields `not-utf8` and the next line follows. Bytes after
 * the last newline at the end of the stream are dropped (a peer that went away mid-line).
 */
export async function* boundedLines(stream: ReadableStream<Uint8Array>, maxBytes: number): AsyncGenerator<LineEvent> {
  const reader = stream.getReader();
  const dec = new TextDecoder("utf-8", { fatal: true });
  let parts: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      let chunk = value;
      while (chunk.length > 0) {
        const nl = chunk.indexOf(10);
        const take = nl < 0 ? chunk.length : nl;
        if (size + take > maxBytes) {
          yield { kind: "too-long", max: maxBytes };
          return;
        }
        if (nl < 0) {
          parts.push(chunk);
          size += chunk.length;
          break;
        }
        parts.push(chunk.subarray(0, nl));
        size += nl;
        const bytes = _concat(parts, size);
        parts = [];
        size = 0;
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
    reader.releaseLock();
  }
}
