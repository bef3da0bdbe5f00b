import assert from "node:assert/strict";
import type { Clock } from "./clock.ts";
import { ExecHistory } from "./exec_history.ts";
import { executionMemory, MAX_EXECUTION_MEMORY } from "./exec_limits.ts";
import { collector, key, session, start } from "./_session_harness.ts";

/** A clock that moves only when the test moves it; its timers never fire by themselves. */
class StillClock implements Clock {
  t = 0;
  now(): number {
    return this.t;
  }
  setTimer(): { cancel(): void } {
    return { cancel: () => {} };
  }
}

Deno.test("a cancellation handed over after the timeout's instant leaves the end of a program that ended before it its own", async () => {
  const clock = new StillClock();
  const x = await session({ worker: { clock } });
  let release!: () => void;
  const stalled = new Promise<void>((r) => release = r);
  const out = collector();
  const peer = await x.c.execute(
    key(),
    start(["/bin/sh", "-c", "seq 1 5000"], { timeoutMs: 100, chunk: 1024, output: { unit: "frames", size: 1 } }),
    (s, b) => {
      out.sink(s, b);
      return stalled;
    },
  );
  // The program ends while its output waits for credit; the worker "did not run" past the timeout's instant.
  const deadline = performance.now() + 3000;
  while (x.worker.engine.count > 0 && performance.now() < deadline) {
    if ((await statusCollected(x.pids[0]!))) break;
    await new Promise((res) => setTimeout(res, 10));
  }
  clock.t = 10_000;
  await peer.cancel("cancel");
  release();
  const o = await peer.terminal;
  assert.deepEqual([o.status, o.cause], [{ kind: "exit", code: 0 }, null]);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

/** Whether the program's process is gone (its status was collected by the worker). */
async function statusCollected(pid: number): Promise<boolean> {
  try {
    await Deno.stat(`/proc/${pid}`);
    return false;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return true;
    throw e;
  }
}

Deno.test("the history remembers the latest generation of up to its capacity of IDs, forgetting the first heard of", () => {
  const h = new ExecHistory(3);
  h.record(1n, 5n);
  assert.equal(h.standing(1n, 4n), "stale");
  assert.equal(h.standing(1n, 5n), "current");
  assert.equal(h.standing(1n, 6n), "later");
  assert.equal(h.standing(2n, 1n), "new");
  h.record(2n, 1n);
  h.record(3n, 1n);
  h.record(1n, 6n);
  h.record(4n, 1n);
  assert.equal(h.size, 3);
  assert.equal(h.standing(1n, 1n), "new", "ID 1 was heard of first, so it is forgotten");
  assert.equal(h.standing(2n, 0n), "stale");
});

Deno.test("an execution's memory: a chunk of each output stream and the input's window", () => {
  const s = { chunk: 1000, stdin: true, input: { unit: "bytes" as const, size: 500 } };
  assert.equal(executionMemory(s), 2500);
  assert.equal(executionMemory({ ...s, input: { unit: "frames", size: 3 } }), 5000);
  assert.equal(executionMemory({ ...s, stdin: false }), 2000);
  assert.equal(MAX_EXECUTION_MEMORY, 1024 * 1024);
});
