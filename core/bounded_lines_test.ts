import assert from "node:assert/strict";
import { boundedLines, type ByteReader, type LineEvent } from "./bounded_lines.ts";

const enc = new TextEncoder();

/** A stream of `chunks`; `pulled` counts how many were read (to prove the reader stops early). */
function streamOf(chunks: Uint8Array[]): { stream: ReadableStream<Uint8Array>; pulled: () => number } {
  let i = 0;
  return {
    stream: new ReadableStream({
      pull(c) {
        if (i < chunks.length) c.enqueue(chunks[i++]!);
        else c.close();
      },
    }),
    pulled: () => i,
  };
}

async function all(s: ReadableStream<Uint8Array>, max: number): Promise<LineEvent[]> {
  const out: LineEvent[] = [];
  for await (const e of boundedLines(s, max)) out.push(e);
  return out;
}

Deno.test("boundedLines splits lines across and within chunks", async () => {
  const { stream } = streamOf([enc.encode('{"a"'), enc.encode(':1}\n{"b":2}\n{'), enc.encode('"c":3}\n')]);
  assert.deepEqual(await all(stream, 64), [
    { kind: "line", line: '{"a":1}' },
    { kind: "line", line: '{"b":2}' },
    { kind: "line", line: '{"c":3}' },
  ]);
});

Deno.test("a line at the cap passes; one byte more is refused before the rest is read", async () => {
  const ok = streamOf([enc.encode("x".repeat(8) + "\n")]);
  assert.deepEqual(await all(ok.stream, 8), [{ kind: "line", line: "xxxxxxxx" }]);
  // 1000 chunks of 1 KiB without a newline: the reader stops after the cap, not at the end.
  const big = streamOf(Array.from({ length: 1000 }, () => new Uint8Array(1024).fill(0x61)));
  assert.deepEqual(await all(big.stream, 4096), [{ kind: "too-long", max: 4096 }]);
  // The fifth chunk passes the cap; the stream's queue pulls one more ahead of the reader.
  assert.ok(big.pulled() <= 6, `read ${big.pulled()} chunks past a 4 KiB cap`);
});

Deno.test("a line that is not UTF-8 is reported and the next one still reads; a trailing partial line is dropped", async () => {
  const { stream } = streamOf([new Uint8Array([0xff, 0xfe, 10]), enc.encode("ok\npartial")]);
  assert.deepEqual(await all(stream, 64), [{ kind: "not-utf8" }, { kind: "line", line: "ok" }]);
});

Deno.test("a partial line is copied out of its chunk: the chunk's buffer is neither kept nor read again", async () => {
  // Each chunk is a one-byte window on one 64 KiB buffer that the source reuses (as a socket reader does): a reader
  // that kept views would see the later bytes, and would pin one such buffer per byte it keeps.
  const shared = new Uint8Array(65536);
  const text = '{"id":1}';
  let i = 0;
  const state = { partialBytes: 0 };
  const seen: number[] = [];
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i > text.length) return c.close();
      shared[0] = i < text.length ? text.charCodeAt(i) : 10;
      c.enqueue(shared.subarray(0, 1));
      i++;
    },
  });
  const out: LineEvent[] = [];
  for await (const e of boundedLines(stream, 64, state)) {
    out.push(e);
    seen.push(state.partialBytes);
  }
  assert.deepEqual(out, [{ kind: "line", line: text }]);
  assert.deepEqual(seen, [0], "no partial bytes are kept once the line ended");
});

Deno.test("the bytes kept for a partial line are counted, and never pass the cap", async () => {
  const state = { partialBytes: 0 };
  const { stream } = streamOf([enc.encode("abc"), enc.encode("de"), enc.encode("fghij")]);
  const it = boundedLines(stream, 8, state);
  const first = await it.next();
  assert.deepEqual(first.value, { kind: "too-long", max: 8 });
  assert.equal(state.partialBytes, 5, "abc + de were kept, fghij was refused before it was");
});

/**
 * A reader of `chunks` with `Deno.Conn`'s `read`: each read copies the next chunk (or what fits of it) into the
 * caller's buffer; `reads` counts the reads that returned bytes.
 */
function readerOf(
  chunks: Uint8Array[],
): { reader: ByteReader; reads: () => number } {
  const queue = chunks.map((c) => c.slice());
  let reads = 0;
  return {
    reader: {
      read(p) {
        const c = queue.shift();
        if (c === undefined) return Promise.resolve(null);
        const n = Math.min(p.length, c.length);
        p.set(c.subarray(0, n));
        if (n < c.length) queue.unshift(c.subarray(n));
        reads++;
        return Promise.resolve(n);
      },
    },
    reads: () => reads,
  };
}

Deno.test("a reader read directly yields what a stream of the same chunks yields", async (t) => {
  const cases: [string, Uint8Array[], number][] = [
    ["lines across and within chunks", [enc.encode('{"a"'), enc.encode(':1}\n{"b":2}\n{'), enc.encode('"c":3}\n')], 64],
    ["a line at the cap", [enc.encode("x".repeat(8) + "\n")], 8],
    ["a line past the cap", [enc.encode("abc"), enc.encode("de"), enc.encode("fghij\n")], 8],
    ["not UTF-8, then a line, then a partial one", [new Uint8Array([0xff, 0xfe, 10]), enc.encode("ok\npartial")], 64],
    ["a chunk larger than the reader's buffer", [enc.encode("y".repeat(70_000) + "\nz\n")], 80_000],
    ["one byte per chunk", [...enc.encode('{"id":1}\n')].map((b) => new Uint8Array([b])), 64],
  ];
  for (const [name, chunks, max] of cases) {
    await t.step(name, async () => {
      const fromReader: LineEvent[] = [];
      for await (const e of boundedLines(readerOf(chunks).reader, max)) fromReader.push(e);
      assert.deepEqual(fromReader, await all(streamOf(chunks).stream, max));
      assert.ok(fromReader.length > 0);
    });
  }
});

Deno.test("a reader is read no further than the cap: a line past it ends the reading", async () => {
  const big = readerOf(Array.from({ length: 1000 }, () => new Uint8Array(1024).fill(0x61)));
  const out: LineEvent[] = [];
  for await (const e of boundedLines(big.reader, 4096)) out.push(e);
  assert.deepEqual(out, [{ kind: "too-long", max: 4096 }]);
  assert.equal(big.reads(), 5, "the fifth 1 KiB read passes the 4 KiB cap; nothing after it is read");
});
