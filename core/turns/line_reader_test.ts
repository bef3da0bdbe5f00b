import assert from "node:assert/strict";
import { LineSplitter, readLines } from "./line_reader.ts";

const enc = (s: string) => new TextEncoder().encode(s);

function _summary(events: ReturnType<LineSplitter["push"]>): string[] {
  return events.map((e) => ("line" in e ? `line:${e.line}` : `refused:${e.refused.reason}`));
}

Deno.test("lines split across chunks come out whole and in order", () => {
  const s = new LineSplitter(64);
  assert.deepEqual(_summary(s.push(enc(`{"a":1}\n{"b"`))), ['line:{"a":1}']);
  assert.deepEqual(_summary(s.push(enc(`:2}\n\n{"c":3}\n`))), ['line:{"b":2}', "line:", 'line:{"c":3}']);
  assert.deepEqual(s.finish(), []);
});

Deno.test("a line past the cap is refused once and discarded to its newline, without being kept", () => {
  const s = new LineSplitter(8);
  assert.deepEqual(_summary(s.push(enc("0123456"))), []);
  assert.deepEqual(_summary(s.push(enc("789abc"))), ["refused:line-too-long"]);
  // The discarded tail spans more chunks; nothing of it is yielded.
  assert.deepEqual(_summary(s.push(enc("x".repeat(10_000)))), []);
  assert.deepEqual(_summary(s.push(enc("yy\nok\n"))), ["line:ok"]);
});

Deno.test("a line of exactly the cap is accepted; one byte more is refused", () => {
  const s = new LineSplitter(4);
  assert.deepEqual(_summary(s.push(enc("abcd\nabcde\n"))), ["line:abcd", "refused:line-too-long"]);
});

Deno.test("invalid UTF-8 is refused per line; the next line still decodes", () => {
  const s = new LineSplitter(64);
  const bad = new Uint8Array([0x7b, 0xff, 0x7d, 0x0a, ...enc("{}\n")]);
  assert.deepEqual(_summary(s.push(bad)), ["refused:bad-utf8", "line:{}"]);
});

Deno.test("a multi-byte character split across chunks decodes", () => {
  const s = new LineSplitter(64);
  const b = enc("é\n");
  assert.deepEqual(_summary(s.push(b.subarray(0, 1))), []);
  assert.deepEqual(_summary(s.push(b.subarray(1))), ["line:é"]);
});

Deno.test("a stream ending inside a line refuses it as truncated-line", async () => {
  const stream = ReadableStream.from([enc('{}\n{"type"')]);
  const got: string[] = [];
  for await (const e of readLines(stream, 64)) got.push("line" in e ? e.line : e.refused.reason);
  assert.deepEqual(got, ["{}", "truncated-line"]);
});

Deno.test("the cap must be a positive integer", () => {
  assert.throws(() => new LineSplitter(0), RangeError);
});
