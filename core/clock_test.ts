import assert from "node:assert/strict";
import { repeat, wallNanos } from "./clock.ts";
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

Deno.test("wallNanos() is the clock's wall time in nanoseconds, at millisecond precision", async () => {
  const c = new FakeClock(1_700_000_000_123);
  assert.equal(wallNanos(c), 1_700_000_000_123_000_000n);
  await c.advance(2);
  assert.equal(wallNanos(c), 1_700_000_000_125_000_000n);
  const before = BigInt(Date.now()) * 1_000_000n;
  const real = wallNanos();
  assert.ok(real >= before && real <= BigInt(Date.now()) * 1_000_000n, "the default is the real clock");
});
