import assert from "node:assert/strict";
import { fileTransport, type RawReader, type RawWriter, RESET } from "./transport.ts";

/** Ends that have both the async and the blocking calls, and record which ran. */
function ends(input: Uint8Array[]): { r: RawReader; w: RawWriter; calls: string[]; out: number[] } {
  const calls: string[] = [];
  const out: number[] = [];
  const take = (p: Uint8Array): number | null => {
    const next = input.shift();
    if (next === undefined) return null;
    p.set(next);
    return next.length;
  };
  // A writer that takes at most 3 bytes a call, as a pipe may take part of a write.
  const put = (p: Uint8Array): number => {
    const n = Math.min(3, p.length);
    out.push(...p.subarray(0, n));
    return n;
  };
  return {
    calls,
    out,
    r: {
      read: (p) => (calls.push("read"), Promise.resolve(take(p))),
      readSync: (p) => (calls.push("readSync"), take(p)),
    },
    w: {
      write: (p) => (calls.push("write"), Promise.resolve(put(p))),
      writeSync: (p) => (calls.push("writeSync"), put(p)),
    },
  };
}

Deno.test("fileTransport with blocking reads and writes through the blocking calls, every byte in order", async () => {
  const e = ends([new Uint8Array([1, 2]), new Uint8Array([3])]);
  const t = fileTransport(e.r, e.w, { blocking: true });
  assert.deepEqual(await t.read(), new Uint8Array([1, 2]));
  assert.deepEqual(await t.read(), new Uint8Array([3]));
  assert.equal(await t.read(), null);
  await t.write(new Uint8Array([9, 8, 7, 6, 5]));
  assert.deepEqual(e.out, [9, 8, 7, 6, 5]);
  assert.deepEqual(e.calls, ["readSync", "readSync", "readSync", "writeSync", "writeSync"]);
});

Deno.test("fileTransport without blocking, or with ends that have no blocking calls, awaits the async ones", async (t) => {
  await t.step("not asked", async () => {
    const e = ends([new Uint8Array([1])]);
    const tr = fileTransport(e.r, e.w);
    assert.deepEqual(await tr.read(), new Uint8Array([1]));
    await tr.write(new Uint8Array([4, 5, 6, 7]));
    assert.deepEqual(e.calls, ["read", "write", "write"]);
  });
  await t.step("asked, but the ends have none (a Deno.Conn)", async () => {
    const e = ends([new Uint8Array([1])]);
    const tr = fileTransport({ read: e.r.read }, { write: e.w.write }, { blocking: true });
    assert.deepEqual(await tr.read(), new Uint8Array([1]));
    await tr.write(new Uint8Array([4]));
    assert.deepEqual(e.calls, ["read", "write"]);
  });
});

Deno.test("fileTransport with blocking and resetOnEof reports the host's absence once as a reset", async () => {
  const input = [new Uint8Array([1])];
  const e = ends(input);
  const tr = fileTransport(e.r, e.w, { blocking: true, resetOnEof: true, retryMs: 0 });
  assert.deepEqual(await tr.read(), new Uint8Array([1]));
  // The port reads end of file while the host is away: a reset, then retries (on a timer) until bytes arrive.
  assert.equal(await tr.read(), RESET);
  const later = tr.read();
  setTimeout(() => input.push(new Uint8Array([2])), 0);
  assert.deepEqual(await later, new Uint8Array([2]));
  assert.ok(e.calls.every((c) => c === "readSync"), e.calls.join(","));
});
