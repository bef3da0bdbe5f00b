import assert from "node:assert/strict";
import { settled } from "./settled.ts";

Deno.test("settled() resolves after a rejection, which its owner still sees", async () => {
  const failure = new Error("the job failed");
  const job = Promise.reject(failure);
  await settled(job);
  await assert.rejects(job, (e) => e === failure);
});

Deno.test("settled() resolves only once the promise has settled", async () => {
  const order: string[] = [];
  let finish!: () => void;
  const job = new Promise<void>((r) => finish = r).then(() => void order.push("job"));
  const tail = settled(job).then(() => void order.push("tail"));
  order.push("before");
  finish();
  await tail;
  assert.deepEqual(order, ["before", "job", "tail"]);
});
