import assert from "node:assert/strict";
import { repeat } from "./clock.ts";
import { FakeClock } from "../fixtures/clock/fake_clock.ts";

Deno.test("repeat() runs every interval until cancelled, including a cancel from inside the callback", async () => {
  const c = new FakeClock();
  const at: number[] = [];
  const r = repeat(c, 100, () => {
    at.push(c.monotonic());
    if (at.length === 3) r.cancel();
  });
  await c.advance(1000);
  assert.deepEqual(at, [100, 200, 300]);
  assert.equal(c.pending, 0);
  const seen: number[] = [];
  const r2 = repeat(c, 50, () => seen.push(c.monotonic()));
  await c.advance(120);
  r2.cancel();
  await c.advance(1000);
  assert.deepEqual(seen, [1050, 1100]);
});
