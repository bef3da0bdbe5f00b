import assert from "node:assert/strict";
import { encodeFrame, Kind } from "../../core/framing/mod.ts";
import { childConn } from "./framing_conn.ts";
import { FramingClient } from "./framing_client.ts";
import type { ByteConn } from "./framing_conn.ts";

/** A child whose stdout yields `chunks` (a byte stream, so BYOB reads work) and whose stdin records each write. */
function fakeChild(chunks: Uint8Array[]) {
  const written: Uint8Array[] = [];
  const stdout = new ReadableStream({
    type: "bytes",
    pull(c: ReadableByteStreamController) {
      const next = chunks.shift();
      if (next === undefined) {
        c.close();
        c.byobRequest?.respond(0); // a pending BYOB read ends with done
        return;
      }
      c.enqueue(next.slice());
    },
  });
  const stdin = new WritableStream<Uint8Array>({ write: (chunk) => void written.push(chunk) });
  return { stdout, stdin, written };
}

Deno.test("childConn hands the caller's bytes to the child's stdin without a copy", async () => {
  const child = fakeChild([]);
  const conn = childConn(child);
  const bytes = Uint8Array.of(1, 2, 3);
  assert.equal(await conn.write(bytes), 3);
  assert.equal(child.written[0], bytes);
  conn.close();
});

Deno.test("childConn reads what the child wrote, in order, into buffers of any size across reads", async () => {
  const child = fakeChild([Uint8Array.of(1, 2, 3, 4, 5), Uint8Array.of(6), Uint8Array.of(7, 8, 9)]);
  const conn = childConn(child);
  const got: number[] = [];
  for (const size of [2, 8, 1, 16, 16, 16]) {
    const p = new Uint8Array(size);
    const n = await conn.read(p);
    if (n === null) break;
    got.push(...p.subarray(0, n));
  }
  assert.deepEqual(got, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  conn.close();
});

Deno.test("the framing client reads every chunk into the one buffer it allocated", async () => {
  const frames = [encodeFrame(Kind.Echo, Uint8Array.of(1, 2)), encodeFrame(Kind.Echo, Uint8Array.of(3, 4))];
  const buffers: Uint8Array[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const conn: ByteConn = {
    async read(p) {
      buffers.push(p);
      const f = frames.shift();
      if (f === undefined) {
        await gate;
        return null;
      }
      p.set(f);
      return f.length;
    },
    write: (p) => Promise.resolve(p.length),
    close: () => release(),
  };
  const c = await FramingClient.attach(conn);
  assert.deepEqual([...(await c.receive(1000)).body], [1, 2]);
  assert.deepEqual([...(await c.receive(1000)).body], [3, 4], "the first message was copied out before the reuse");
  c.close();
  await c.done;
  assert.equal(buffers.length, 3);
  assert.ok(buffers.every((b) => b === buffers[0]), "one buffer for every read");
});
