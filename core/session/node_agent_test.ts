import assert from "node:assert/strict";
import { bcd, encodeMessage } from "../../proto/mod.ts";
import { boundHelloResults, MAX_HELLO_RESULT_BYTES, MAX_HELLO_RESULTS } from "./node_agent.ts";

Deno.test("boundHelloResults(): the oldest results within the count and byte bounds, in order", () => {
  const many = Array.from({ length: 200 }, (_, i) => ({ command_id: `c-${i}`, state: 5, reason: "BAD_SIGNATURE" }));
  const b = boundHelloResults(many);
  assert.equal(b.length, MAX_HELLO_RESULTS);
  assert.deepEqual(b.map((r) => r.command_id), many.slice(0, MAX_HELLO_RESULTS).map((r) => r.command_id));
  const big = Array.from({ length: 10 }, (_, i) => ({ command_id: `b-${i}`, state: 4, message: "m".repeat(200_000) }));
  const c = boundHelloResults(big);
  const bytes = c.reduce((n, r) => n + encodeMessage(bcd.v1.CommandUpdate, r).length, 0);
  assert.ok(c.length >= 1 && c.length < 10, `${c.length} of 10 large results`);
  assert.ok(bytes <= MAX_HELLO_RESULT_BYTES);
  assert.deepEqual(c.map((r) => r.command_id), big.slice(0, c.length).map((r) => r.command_id));
});
