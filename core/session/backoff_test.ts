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
