import assert from "node:assert/strict";
import { AsyncQueue, TakeAborted } from "./async_queue.ts";

Deno.test("AsyncQueue: close rejects the waiting takers and every later take of an empty queue with its reason", async () => {
  const q = new AsyncQueue<number>();
  const waiting = q.take();
  q.put(1);
  assert.equal(await waiting, 1);
  q.put(2);
  const pending = q.take(); // takes 2 at once
  const blocked = q.take();
  const stop = new RangeError("stopped");
  q.close(stop);
  assert.equal(await pending, 2);
  await assert.rejects(blocked, (e) => e === stop);
  // A taker that comes after the close (a worker ending its job after a stop) gets the reason, never a wait.
  await assert.rejects(q.take(), (e) => e === stop);
  q.put(3); // an item put after the close is still handed out first
  assert.equal(await q.take(), 3);
  await assert.rejects(q.take(), (e) => e === stop);
});

Deno.test("AsyncQueue: an aborted take leaves the queue, and the next item goes to the next taker", async () => {
  const q = new AsyncQueue<string>();
  const ac = new AbortController();
  const first = q.take(ac.signal);
  const second = q.take();
  ac.abort();
  await assert.rejects(first, TakeAborted);
  q.put("a");
  assert.equal(await second, "a");
});
