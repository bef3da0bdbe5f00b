import assert from "node:assert/strict";
import { Backoff } from "./backoff.ts";

Deno.test("backoff doubles its ceiling up to the maximum, with jitter in the upper half", () => {
  const lo = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0 });
  assert.deepEqual([1, 2, 3, 4, 5, 6].map(() => lo.next()), [50, 100, 200, 400, 500, 500]);
  const hi = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0.999999 });
  assert.deepEqual([1, 2, 3, 4, 5].map(() => hi.next()), [100, 200, 400, 800, 1000]);
});

Deno.test("reset starts again from the base after a session reached Welcome", () => {
  const b = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0 });
  b.next();
  b.next();
  b.reset();
  assert.equal(b.next(), 50);
});

Deno.test("nonsense bounds are refused", () => {
  assert.throws(() => new Backoff({ baseMs: 0 }), RangeError);
  assert.throws(() => new Backoff({ baseMs: 10, maxMs: 5 }), RangeError);
});

Deno.test("the jitter is equal jitter: every delay lies in [ceiling/2, ceiling], never below the floor", () => {
  // A deterministic sweep of the random source over [0, 1) instead of Math.random.
  const draws = Array.from({ length: 101 }, (_, i) => Math.min(i / 100, 0.999999));
  for (const [attempt, ceiling] of [[0, 100], [1, 200], [2, 400], [3, 800], [4, 1000], [9, 1000]] as const) {
    const seen = draws.map((r) => {
      const b = new Backoff({ baseMs: 100, maxMs: 1000, random: () => r });
      for (let i = 0; i < attempt; i++) b.next();
      return b.next();
    });
    assert.ok(seen.every((d) => d >= ceiling / 2 && d <= ceiling), `attempt ${attempt}: ${seen}`);
    assert.equal(Math.min(...seen), ceiling / 2);
    assert.equal(Math.max(...seen), ceiling);
  }
});
